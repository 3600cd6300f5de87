//! The SVG chart of the fleet simulation: load against failure rate, one panel per client
//! count, one line per strategy. Written by hand: a few lines of SVG do not earn a plotting
//! dependency.

use crate::sim::{self, Row, Strategy};
use std::fmt::Write as _;

const PANEL: f64 = 400.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 55.0;
const GAP: f64 = 40.0;
const TOP: f64 = 45.0;
const BOTTOM: f64 = 45.0;
const LEGEND: f64 = 150.0;
const COLORS: [&str; 7] = [
    "#666666", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
];
const DASHES: [&str; 7] = ["none", "none", "6 3", "6 3", "none", "none", "2 3"];
const Y_MAX: f64 = 2.0;

pub(crate) fn svg(rows: &[Row]) -> String {
    let width = LEFT + 2.0 * PANEL + GAP + LEGEND;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="20" font-size="14">Load (attempts per call) against the failure rate, 1 000 calls/s over 100 or 1 000 clients</text>"#
    );
    for (p, clients) in sim::CLIENTS.into_iter().enumerate() {
        let x0 = LEFT + p as f64 * (PANEL + GAP);
        let x = |f: f64| x0 + PANEL * f;
        let y = |load: f64| TOP + plot_h * (1.0 - load.min(Y_MAX) / Y_MAX);
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{clients} clients</text>"#,
            x0 + PANEL / 2.0,
            TOP - 8.0
        );
        let _ = writeln!(
            out,
            r##"<rect x="{x0}" y="{TOP}" width="{PANEL}" height="{plot_h}" fill="none" stroke="#999"/>"##
        );
        for tick in [0.0, 0.5, 1.0, 1.5, 2.0] {
            let _ = writeln!(
                out,
                r##"<line x1="{x0}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{tick}</text>"##,
                x0 + PANEL,
                y(tick),
                y(tick),
                x0 - 4.0,
                y(tick) + 4.0
            );
        }
        for f in sim::FAILURE_RATES {
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{f}</text>"#,
                x(f),
                HEIGHT - BOTTOM + 16.0
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">failure rate f (load above 2 drawn at 2)</text>"#,
            x0 + PANEL / 2.0,
            HEIGHT - 10.0
        );
        for (i, s) in Strategy::ALL.into_iter().enumerate() {
            let points: Vec<String> = rows
                .iter()
                .filter(|r| r.clients == clients && r.strategy == s)
                .map(|r| format!("{:.1},{:.1}", x(r.failure_rate), y(r.load())))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
                points.join(" "),
                COLORS[i],
                DASHES[i]
            );
        }
    }
    let lx = LEFT + 2.0 * PANEL + GAP + 15.0;
    for (i, s) in Strategy::ALL.into_iter().enumerate() {
        let ly = TOP + 20.0 + 22.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" x2="{:.1}" y1="{ly}" y2="{ly}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 25.0,
            COLORS[i],
            DASHES[i],
            lx + 30.0,
            ly + 4.0,
            s.label()
        );
    }
    out.push_str("</svg>\n");
    out
}
