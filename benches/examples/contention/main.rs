//! The jitter study: Marc Brooker's 2015 "Exponential Backoff And Jitter" experiment rerun with
//! retry-kit's own delay code, as a discrete-event simulation (see `sim.rs`).
//!
//! ```sh
//! cargo run --release -p retry-kit-benches --example contention
//! ```
//!
//! writes the repository's `results/jitter-study/contention.csv` (`clients,algorithm,completion_ms,write_calls`:
//! means over the runs of each point) and `results/jitter-study/contention.svg` (write calls
//! and completion time against the number of clients, one line per algorithm), and prints the
//! table and how long the grid took.
//!
//! Options: `--out DIR` (default: the repository's `results/`, wherever it is run from), `--seed N` (default 2015, the seed of the committed
//! results), `--runs N` per point (default 100).

mod sim;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use sim::{Algorithm, Point};
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The seed of the committed results.
const SEED: u64 = 2015;
/// N = 10, 20, ..., 190, as in the study.
const CLIENTS: std::ops::RangeInclusive<u32> = 1..=19;
const RUNS: u32 = 100;

struct Options {
    out: PathBuf,
    seed: u64,
    runs: u32,
}

fn main() {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("contention: {message}");
            eprintln!("usage: contention [--out DIR] [--seed N] [--runs N]");
            std::process::exit(2);
        }
    };
    if let Err(error) = run(&options) {
        eprintln!("contention: {error}");
        std::process::exit(1);
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        // This crate is `benches/`; the committed results live at the repository's top level.
        out: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../results")),
        seed: SEED,
        runs: RUNS,
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{flag}` needs a value"));
        match flag.as_str() {
            "--out" => options.out = PathBuf::from(value()?),
            "--seed" => {
                let v = value()?;
                options.seed = v
                    .parse()
                    .map_err(|_| format!("`--seed {v}`: expected an unsigned integer"))?;
            }
            "--runs" => {
                let v = value()?;
                options.runs =
                    v.parse().ok().filter(|&runs| runs > 0).ok_or_else(|| {
                        format!("`--runs {v}`: expected an integer of at least 1")
                    })?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(options)
}

fn run(options: &Options) -> Result<(), Box<dyn Error>> {
    let started = Instant::now();
    let mut points = Vec::new();
    for clients in CLIENTS.map(|i| i * 10) {
        for algorithm in Algorithm::ALL {
            points.push(sim::point(algorithm, clients, options.runs, options.seed));
        }
    }
    let elapsed = started.elapsed();

    let dir = options.out.join("jitter-study");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    let csv_path = dir.join("contention.csv");
    std::fs::write(&csv_path, csv(&points))
        .map_err(|e| format!("cannot write `{}`: {e}", csv_path.display()))?;
    let svg_path = dir.join("contention.svg");
    chart(&points, &svg_path)?;

    print!("{}", csv(&points));
    println!(
        "simulated {} points x {} runs (seed {}) in {:.2} s; wrote {} and {}",
        points.len(),
        options.runs,
        options.seed,
        elapsed.as_secs_f64(),
        csv_path.display(),
        svg_path.display()
    );
    Ok(())
}

fn csv(points: &[Point]) -> String {
    let mut out = String::from("clients,algorithm,completion_ms,write_calls\n");
    for p in points {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{:.3},{:.2}",
            p.clients,
            p.algorithm.name(),
            p.completion_ms,
            p.write_calls
        );
    }
    out
}

/// One colour per algorithm, readable on white and distinct for the common colour-vision
/// deficiencies (Okabe–Ito palette).
fn colour(algorithm: Algorithm) -> RGBColor {
    match algorithm {
        Algorithm::NoBackoff => RGBColor(0, 0, 0),
        Algorithm::Exponential => RGBColor(213, 94, 0),
        Algorithm::FullJitter => RGBColor(0, 114, 178),
        Algorithm::EqualJitter => RGBColor(0, 158, 115),
        Algorithm::Decorrelated => RGBColor(204, 121, 167),
    }
}

fn chart(points: &[Point], path: &Path) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let max = |value: fn(&Point) -> f64| points.iter().map(value).fold(1.0, f64::max);
    let min = |value: fn(&Point) -> f64| points.iter().map(value).fold(f64::MAX, f64::min);
    // Calls on a linear axis, as in the original study: the gap between the curves is the
    // point. Completion times span two decades (exponential without jitter runs away), so a
    // linear axis would flatten the jittered modes into one line: log scale there.
    panel(
        &left,
        points,
        "Write calls (mean of runs)",
        "write calls",
        |p| p.write_calls,
        0.0..max(|p| p.write_calls) * 1.05,
        true,
    )?;
    panel(
        &right,
        points,
        "Completion time of the group (mean of runs, log scale)",
        "completion (ms)",
        |p| p.completion_ms,
        (min(|p| p.completion_ms) * 0.8..max(|p| p.completion_ms) * 1.25).log_scale(),
        // The same colours: one legend is enough, and here it would hide a curve.
        false,
    )?;
    root.present()?;
    Ok(())
}

fn panel<Y>(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    points: &[Point],
    caption: &str,
    y_desc: &str,
    value: fn(&Point) -> f64,
    y_range: Y,
    legend: bool,
) -> Result<(), Box<dyn Error>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let x_max = points.iter().map(|p| p.clients).max().unwrap_or(0) + 10;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0u32..x_max, y_range)?;
    chart
        .configure_mesh()
        .x_desc("clients (N)")
        .y_desc(y_desc)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()?;
    for algorithm in Algorithm::ALL {
        let colour = colour(algorithm);
        let series = points
            .iter()
            .filter(|p| p.algorithm == algorithm)
            .map(|p| (p.clients, value(p)));
        chart
            .draw_series(LineSeries::new(series, colour.stroke_width(2)).point_size(3))?
            .label(algorithm.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    if legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}
