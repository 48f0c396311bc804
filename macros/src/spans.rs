use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use tessera_dsl::Origin;

/// The spans behind the IR's [`Origin`]s, so a diagnostic from validation can point at what
/// the user wrote: one token, or an expression from its first token to its last.
#[derive(Default)]
pub(crate) struct SpanTable {
    ranges: Vec<(Span, Span)>,
}

impl SpanTable {
    /// The origin of one token (a name, an operator, a literal).
    pub(crate) fn origin(&mut self, span: Span) -> Origin {
        self.record(span, span)
    }

    /// The origin of a whole expression or call: its diagnostics underline all of it (on
    /// stable Rust a span cannot be joined, but an error may run from one token to another).
    pub(crate) fn origin_of(&mut self, node: &impl ToTokens) -> Origin {
        let tokens = node.to_token_stream();
        let mut spans = tokens.into_iter().map(|token| token.span());
        let first = spans.next().unwrap_or_else(Span::call_site);
        let last = spans.last().unwrap_or(first);
        self.record(first, last)
    }

    fn record(&mut self, first: Span, last: Span) -> Origin {
        let start = first.start();
        self.ranges.push((first, last));
        Origin { id: (self.ranges.len() - 1) as u32, line: start.line as u32, column: start.column as u32 + 1 }
    }

    /// An error at `origin`, spanning all of it.
    pub(crate) fn error(&self, origin: Origin, message: impl std::fmt::Display) -> syn::Error {
        let Some(&(first, last)) = self.ranges.get(origin.id as usize) else {
            return syn::Error::new(Span::call_site(), message);
        };
        // two tokens carrying the first and last spans: `new_spanned` runs the error between them
        let mut ends = TokenStream::new();
        ends.extend([first, last].map(|span| {
            proc_macro2::TokenTree::Punct({
                let mut punct = proc_macro2::Punct::new('.', proc_macro2::Spacing::Alone);
                punct.set_span(span);
                punct
            })
        }));
        syn::Error::new_spanned(ends, message)
    }
}
