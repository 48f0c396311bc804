//! The README's first example, `examples/first_kernel.rs`, run as it is written (on the CPU
//! simulation without a GPU, on the GPU where there is one), and the README checked to show it
//! as it is: a first example that does not compile or does not get its result back is the
//! first thing a new user meets.

include!("../examples/first_kernel.rs");

#[test]
fn the_first_example_runs_and_gets_the_copy_back() -> Result<(), Error> {
    main()
}

#[test]
fn the_readme_shows_the_first_example_as_it_is() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/first_kernel.rs");
    let start = readme.find("```rust\n").expect("the README has a rust block") + "```rust\n".len();
    let end = start + readme[start..].find("```\n").expect("the README's first rust block ends");
    assert_eq!(
        &readme[start..end],
        example,
        "the README's first example differs from examples/first_kernel.rs: copy the file into the README"
    );
}

mod thread_code_example {
    include!("../examples/row_sums.rs");

    #[test]
    fn the_thread_code_example_sums_its_rows() -> Result<(), Error> {
        main()
    }

    #[test]
    fn the_readme_shows_the_thread_code_example_as_it_is() {
        let readme = include_str!("../README.md");
        let example = include_str!("../examples/row_sums.rs");
        // the file's kernel: from its first line to the end of the function
        let kernel = &example[..example.find("\n}\n").expect("the kernel ends") + 3];
        assert!(
            readme.contains(&format!("```rust\n{kernel}```\n")),
            "the README's thread-code example differs from examples/row_sums.rs's kernel: copy it into the README"
        );
    }
}
