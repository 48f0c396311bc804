use proc_macro2::Span;
use tessera_dsl::Origin;

/// The spans behind the IR's [`Origin`]s, so a diagnostic from validation can point at the
/// token the user wrote.
#[derive(Default)]
pub(crate) struct SpanTable {
    spans: Vec<Span>,
}

impl SpanTable {
    pub(crate) fn origin(&mut self, span: Span) -> Origin {
        let start = span.start();
        self.spans.push(span);
        Origin { id: (self.spans.len() - 1) as u32, line: start.line as u32, column: start.column as u32 + 1 }
    }

    pub(crate) fn span(&self, origin: Origin) -> Span {
        self.spans.get(origin.id as usize).copied().unwrap_or_else(Span::call_site)
    }
}
