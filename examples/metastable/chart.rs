//! The SVG chart of the metastable-failure simulation: goodput per second over virtual time,
//! one line per row, the trigger window shaded. Written by hand: a few lines of SVG do not earn
//! a plotting dependency.

use crate::sim::{Config, Row};
use std::fmt::Write as _;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 220.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 5] = ["#666666", "#d95f02", "#1b9e77", "#7570b3", "#e7298a"];
/// Dashes, so that rows whose lines coincide stay visible beneath each other.
const DASHES: [&str; 5] = ["none", "none", "8 4", "2 3", "1 6"];

pub(crate) fn svg(rows: &[Row], config: &Config) -> String {
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let run = config.run as f64;
    let peak = rows
        .iter()
        .flat_map(|r| r.goodput.iter().copied())
        .max()
        .unwrap_or(0);
    // The y axis up to the next multiple of 20 above the highest second.
    let y_max = f64::from((peak / 20 + 1) * 20);
    let x = |t: f64| LEFT + plot_width * t / run;
    let y = |v: f64| TOP + plot_height * (1.0 - v / y_max);

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="14">Goodput per second through a 10 s capacity halving (paused clock, seeded)</text>"#
    );
    // The trigger window.
    let (t0, t1) = (config.trigger_start as f64, config.trigger_end() as f64);
    let _ = writeln!(
        out,
        r##"<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{plot_height}" fill="#fdd" /><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#a33">capacity halved</text>"##,
        x(t0),
        x(t1) - x(t0),
        (x(t0) + x(t1)) / 2.0,
        TOP - 4.0
    );
    // Grid and axes.
    let mut v = 0.0;
    while v <= y_max {
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v}</text>"##,
            LEFT + plot_width,
            y(v),
            y(v),
            LEFT - 6.0,
            y(v) + 4.0
        );
        v += 20.0;
    }
    let mut t = 0.0;
    while t <= run {
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{t}</text>"##,
            x(t),
            x(t),
            TOP + plot_height,
            TOP + plot_height + 5.0,
            x(t),
            TOP + plot_height + 18.0
        );
        t += 10.0;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{:.1}" stroke="#333"/><line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        TOP + plot_height,
        LEFT + plot_width,
        TOP + plot_height,
        TOP + plot_height
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">virtual time (s)</text><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">successful calls per second</text>"#,
        LEFT + plot_width / 2.0,
        HEIGHT - 12.0,
        TOP + plot_height / 2.0
    );
    // One line per row, each second's point at the middle of its second.
    for (n, r) in rows.iter().enumerate() {
        let color = COLORS[n % COLORS.len()];
        let dash = DASHES[n % DASHES.len()];
        let points: Vec<String> = r
            .goodput
            .iter()
            .enumerate()
            .map(|(t, v)| format!("{:.1},{:.1}", x(t as f64 + 0.5), y(f64::from(*v))))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"/>"#,
            points.join(" ")
        );
        let legend_y = TOP + 10.0 + 20.0 * n as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{legend_y:.1}" y2="{legend_y:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT + plot_width + 14.0,
            LEFT + plot_width + 34.0,
            LEFT + plot_width + 40.0,
            legend_y + 4.0,
            r.protection.label()
        );
    }
    out.push_str("</svg>\n");
    out
}
