//! The page frame every report shares (inline style sheet for light, dark and print, a table of
//! contents) and the small pieces pages are made of: escaped text, tables, figures, numbers that
//! carry their exact value for machines beside their rounded text for people.

use serde_json::Value;

/// Text made safe for HTML element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A rate with an SI prefix and `unit`: `12.19 Mpps`, `5.85 Gbit/s`; `unlimited` for infinity.
pub fn rate(value: f64, unit: &str) -> String {
    if value.is_infinite() {
        return "unlimited".into();
    }
    let (scaled, prefix) = if value >= 1e9 {
        (value / 1e9, "G")
    } else if value >= 1e6 {
        (value / 1e6, "M")
    } else if value >= 1e3 {
        (value / 1e3, "k")
    } else if value > 0.0 && value < 1.0 {
        // Programs that walk whole maps can be this slow at worst: keep three digits.
        return format!("{value:.3e} {unit}");
    } else {
        (value, "")
    };
    format!("{scaled:.2} {prefix}{unit}")
}

/// A number for people, its exact value in `data-value` for machines (the browser tests compare
/// it with the command's JSON). `key` names what it is (`data-key`).
pub fn number(key: &str, value: f64, text: &str) -> String {
    format!(
        r#"<span data-key="{}" data-value="{value}">{}</span>"#,
        esc(key),
        esc(text)
    )
}

/// A table: `header` cells are text, row cells are HTML (escape text with [`esc`]).
pub fn table(class: &str, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<table class=\"{}\"><thead><tr>", esc(class));
    for h in header {
        out.push_str(&format!("<th>{}</th>", esc(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{cell}</td>"));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// A figure: an inline SVG (or other drawing) with a caption.
pub fn figure(class: &str, drawing: &str, caption: &str) -> String {
    format!(
        "<figure class=\"{}\">{drawing}<figcaption>{caption}</figcaption></figure>",
        esc(class)
    )
}

/// A note that a part of the page is missing and why.
pub fn missing(why: &str) -> String {
    format!("<p class=\"missing\">{}</p>", esc(why))
}

/// Field `key` of a JSON object as a number.
pub fn f64_at(value: &Value, key: &str) -> Option<f64> {
    value.get(key).and_then(Value::as_f64)
}

/// Field `key` of a JSON object as a number the page cannot do without; its absence names the
/// command's document `document`.
pub fn need_f64(document: &str, value: &Value, key: &str) -> Result<f64, crate::Error> {
    f64_at(value, key).ok_or_else(|| crate::Error::Input {
        document: document.to_string(),
        what: format!("no number `{key}`"),
    })
}

/// Field `key` of a JSON object as text.
pub fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A page under construction: a title, sections in order, and the table of contents they make.
pub struct Page {
    title: String,
    subtitle: String,
    sections: Vec<(String, String, String)>,
    footer: String,
}

impl Page {
    pub fn new(title: &str, subtitle: &str) -> Page {
        Page {
            title: title.to_string(),
            subtitle: subtitle.to_string(),
            sections: Vec::new(),
            footer: String::new(),
        }
    }

    /// Adds a section with anchor `id`, heading `heading` (text) and HTML `body`.
    pub fn section(&mut self, id: &str, heading: &str, body: String) {
        self.sections
            .push((id.to_string(), heading.to_string(), body));
    }

    /// HTML shown under every section: how the page was made.
    pub fn footer(&mut self, html: String) {
        self.footer = html;
    }

    /// The whole document.
    pub fn finish(self) -> String {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        out.push_str(
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta name=\"color-scheme\" content=\"light dark\">",
        );
        out.push_str(&format!("<title>{}</title>", esc(&self.title)));
        out.push_str("<style>");
        out.push_str(STYLE);
        out.push_str("</style></head><body>\n");
        out.push_str(&format!(
            "<header><h1>{}</h1><p class=\"subtitle\">{}</p></header>\n",
            esc(&self.title),
            esc(&self.subtitle)
        ));
        if self.sections.len() > 1 {
            out.push_str("<nav><ol>");
            for (id, heading, _) in &self.sections {
                out.push_str(&format!(
                    "<li><a href=\"#{}\">{}</a></li>",
                    esc(id),
                    esc(heading)
                ));
            }
            out.push_str("</ol></nav>\n");
        }
        for (id, heading, body) in &self.sections {
            out.push_str(&format!(
                "<section id=\"{}\"><h2>{}</h2>\n{body}\n</section>\n",
                esc(id),
                esc(heading)
            ));
        }
        if !self.footer.is_empty() {
            out.push_str(&format!("<footer>{}</footer>\n", self.footer));
        }
        out.push_str("</body></html>\n");
        out
    }
}

/// The style sheet: colours as variables switched by the reader's colour scheme; print keeps
/// every part visible (no scroll boxes) on white.
const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --panel: #f6f8fa; --hot: #cf222e; --hot-bg: #ffebe9; --good: #1a7f37; --warn: #9a6700;
  --mark: #fff8c5; --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23;
    --hot: #ff7b72; --hot-bg: #3c1618; --good: #3fb950; --warn: #d29922; --mark: #3a3000;
    --link: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 1rem 2rem 3rem; background: var(--bg);
  color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
a { color: var(--link); }
h1 { margin: .5rem 0 0; font-size: 1.6rem; }
h2 { margin-top: 2.2rem; padding-bottom: .3rem; border-bottom: 1px solid var(--line); font-size: 1.25rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
.subtitle, figcaption, .missing, footer { color: var(--muted); }
.missing { font-style: italic; }
nav ol { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; padding: 0; margin: .8rem 0; list-style: none; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
code, .listing, .schedule, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.listing td, .schedule td { padding: 0 .6rem; border: 0; white-space: pre; }
.listing tr.src td { color: var(--muted); padding-top: .35rem; font-style: italic; }
.listing tr.on-path td { background: var(--hot-bg); }
.listing tr.on-path td.mark::before { content: "\25CF"; color: var(--hot); }
.listing tr.rewritten td { background: var(--mark); }
.listing td.cost { color: var(--muted); text-align: right; }
.schedule td { border: 1px solid var(--line); }
.schedule td.empty { background: var(--panel); }
.scroll { max-height: min(75vh, 60rem); overflow: auto; border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0 1rem; }
.side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.side-by-side > div { min-width: 0; }
.figures { display: flex; flex-wrap: wrap; gap: 1rem; }
figure { margin: .5rem 0 1rem; }
figure svg { max-width: 100%; height: auto; }
.cfg svg { max-width: none; }
.cfg svg g.graph > polygon:first-of-type { fill: none; stroke: none; }
.cfg svg a { color: var(--fg); }
.cfg svg text { fill: currentColor; }
.cfg svg [stroke="black"] { stroke: currentColor; }
.cfg svg polygon[fill="black"] { fill: currentColor; }
.good { color: var(--good); } .bad { color: var(--hot); } .warn { color: var(--warn); }
.legend span { margin-right: 1.2rem; }
.swatch { display: inline-block; width: .9em; height: .9em; border-radius: 2px; vertical-align: -.1em; margin-right: .3em; }
footer { margin-top: 3rem; font-size: .85rem; border-top: 1px solid var(--line); padding-top: .6rem; }
@media print {
  :root { --bg: #fff; --fg: #000; --muted: #444; --line: #bbb; --panel: #eee; --hot-bg: #fde2e0; --mark: #fff5b1; }
  body { max-width: none; padding: 0; font-size: 10.5pt; }
  nav { display: none; }
  .scroll { max-height: none; overflow: visible; border: 0; }
  .cfg svg { max-width: 100%; height: auto; }
  figure, table tr { break-inside: avoid; }
  h2 { break-after: avoid; }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn rates_take_si_prefixes() {
        assert_eq!(rate(12_185_123.1, "pps"), "12.19 Mpps");
        assert_eq!(rate(5.85e9, "bit/s"), "5.85 Gbit/s");
        assert_eq!(rate(f64::INFINITY, "pps"), "unlimited");
        assert_eq!(rate(999.0, "pps"), "999.00 pps");
        assert_eq!(rate(0.0011717, "pps"), "1.172e-3 pps");
    }

    #[test]
    fn a_page_lists_its_sections_and_escapes_headings() {
        let mut page = Page::new("p<1>", "sub");
        page.section("a", "First & one", "<p>x</p>".into());
        page.section("b", "Second", "<p>y</p>".into());
        let html = page.finish();
        assert!(html.contains("<title>p&lt;1&gt;</title>"));
        assert!(html.contains("<a href=\"#a\">First &amp; one</a>"));
        assert!(html.contains("<section id=\"b\"><h2>Second</h2>"));
        assert!(html.ends_with("</html>\n"));
    }
}
