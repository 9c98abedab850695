//! Rendering report pages in a real browser (Debian's headless Chromium): a copy of the page
//! gets a script that records, on every `<svg>`, the size the browser drew it at and how many
//! elements it holds; the DOM after rendering comes back as text.

use std::path::Path;
use std::process::Command;

/// The browser's binary, when installed.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The rendered DOM of the page at `page`, each `<svg>` carrying `data-drawn="W H N"` (its drawn
/// width and height in CSS pixels, its element count). `scratch` holds the instrumented copy.
pub fn rendered_dom(page: &Path, scratch: &Path) -> String {
    let html = std::fs::read_to_string(page).expect("the page is text");
    let probe = "<script>for (const s of document.querySelectorAll('svg')) { \
        const r = s.getBoundingClientRect(); \
        s.setAttribute('data-drawn', r.width + ' ' + r.height + ' ' + s.querySelectorAll('*').length); }\
        </script></body>";
    let copy = scratch.join(format!(
        "probed-{}",
        page.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("page.html")
    ));
    std::fs::write(&copy, html.replacen("</body>", probe, 1)).expect("scratch is writable");
    let dom = headless(&["--dump-dom".to_string()], &copy);
    String::from_utf8(dom).expect("the DOM is UTF-8")
}

/// Every `data-drawn` the probe wrote: `(width, height, elements)` per `<svg>`, in page order.
pub fn drawn_svgs(dom: &str) -> Vec<(f64, f64, usize)> {
    dom.split("data-drawn=\"")
        .skip(1)
        .filter_map(|rest| {
            let value = rest.split('"').next()?;
            let mut parts = value.split(' ');
            Some((
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// A screenshot of the page at `page` (`width` × `height` CSS pixels) written to `png`.
pub fn screenshot(page: &Path, png: &Path, width: u32, height: u32) {
    headless(
        &[
            "--hide-scrollbars".to_string(),
            format!("--window-size={width},{height}"),
            format!("--screenshot={}", png.display()),
        ],
        page,
    );
}

/// Runs headless Chromium with `flags` on the page at `page`; its standard output.
fn headless(flags: &[String], page: &Path) -> Vec<u8> {
    let browser = chromium().expect("chromium is installed (scripts/setup.sh)");
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args(flags)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
