"""What the labs' variant writers share: tessera's emitted kernels as the golden files hold them
(tests/golden, so a lab measures what the code generator writes today), and the one-place edit
that turns one into a variant.

    sys.path.insert(0, <this folder>); from golden import golden, replace_once
"""
import os

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden")


def golden(name):
    """The emitted CUDA C of kernel `name`."""
    with open(os.path.join(GOLDEN, name + ".cu")) as f:
        return f.read()


def replace_once(text, old, new):
    """`text` with `old`, which must occur exactly once, made `new`: an edit that matches nothing,
    or more than the place meant, stops the lab rather than measure another kernel."""
    assert text.count(old) == 1, f"the emitted code changed: {text.count(old)} of `{old[:70]}..`"
    return text.replace(old, new, 1)
