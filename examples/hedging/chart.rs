//! The SVG chart of the hedging simulation: latency percentiles on a log scale (top) and the
//! extra load (bottom), one column per hedge delay. Written by hand: a few lines of SVG do not
//! earn a plotting dependency.

use crate::Row;
use std::fmt::Write as _;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const LATENCY_HEIGHT: f64 = 300.0;
const GAP: f64 = 70.0;
const LOAD_HEIGHT: f64 = 120.0;
/// The latency axis, in milliseconds (log scale).
const LOW_MS: f64 = 1.0;
const HIGH_MS: f64 = 10_000.0;

/// One series of the latency panel, read off a row in milliseconds.
type Value = fn(&Row) -> f64;

pub(crate) fn svg(rows: &[Row]) -> String {
    let plot_width = WIDTH - LEFT - RIGHT;
    let step = plot_width / rows.len() as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let y_latency = |ms: f64| {
        let t = (ms.clamp(LOW_MS, HIGH_MS).log10() - LOW_MS.log10())
            / (HIGH_MS.log10() - LOW_MS.log10());
        TOP + LATENCY_HEIGHT * (1.0 - t)
    };
    let load_top = TOP + LATENCY_HEIGHT + GAP;
    let max_load = rows
        .iter()
        .map(|r| r.extra_load)
        .fold(0.0_f64, f64::max)
        .max(0.01);
    let height = load_top + LOAD_HEIGHT + 50.0;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="14">Request latency by hedge delay (paused clock, seeded)</text>"#
    );
    // Latency grid: one line per decade.
    let mut ms = LOW_MS;
    while ms <= HIGH_MS {
        let y = y_latency(ms);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{ms} ms</text>"##,
            LEFT + plot_width,
            LEFT - 6.0,
            y + 4.0
        );
        ms *= 10.0;
    }
    let series: [(&str, &str, Value); 3] = [
        ("p50", "#1b9e77", |r| r.p50.as_secs_f64() * 1000.0),
        ("p99", "#d95f02", |r| r.p99.as_secs_f64() * 1000.0),
        ("p99.9", "#7570b3", |r| r.p999.as_secs_f64() * 1000.0),
    ];
    for (n, (name, color, value)) in series.iter().enumerate() {
        let points: Vec<String> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{:.1},{:.1}", x(i), y_latency(value(r))))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            points.join(" ")
        );
        for (i, r) in rows.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{name} {:.1} ms</title></circle>"#,
                x(i),
                y_latency(value(r)),
                value(r)
            );
        }
        let legend_y = TOP + 20.0 * n as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}">{name} latency</text>"#,
            LEFT + plot_width + 16.0,
            legend_y,
            LEFT + plot_width + 34.0,
            legend_y + 10.0
        );
    }
    // Extra load: one bar per row.
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{:.1}">extra requests (attempts per request − 1)</text>"#,
        load_top - 20.0
    );
    for (i, r) in rows.iter().enumerate() {
        // Headroom above the tallest bar for its label.
        let h = LOAD_HEIGHT * r.extra_load / (max_load * 1.25);
        let _ = writeln!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#999"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{:.1} %</text>"##,
            x(i) - step * 0.3,
            load_top + LOAD_HEIGHT - h,
            step * 0.6,
            x(i),
            load_top + LOAD_HEIGHT - h - 4.0,
            r.extra_load * 100.0
        );
        let delay = r
            .delay
            .map(|d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">{delay}</text>"##,
            x(i),
            load_top + LOAD_HEIGHT + 18.0,
            r.label,
            x(i),
            load_top + LOAD_HEIGHT + 34.0
        );
    }
    out.push_str("</svg>\n");
    out
}
