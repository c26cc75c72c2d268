//! A small hand-written SVG line chart of training curves (one value per epoch), so that the
//! `digits` example needs no plotting dependency.

use std::fmt::Write as _;
use std::path::Path;

/// One chart: a title and its curves, each a label and one value per epoch (epochs 1, 2, ...).
pub struct Panel<'a> {
    pub title: &'a str,
    pub curves: Vec<(&'a str, Vec<f64>)>,
}

const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 320.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 4] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"];

/// Writes the panels side by side to `path` as an SVG image.
pub fn write_svg(path: &Path, panels: &[Panel]) -> std::io::Result<()> {
    let width = PANEL_W * panels.len() as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{PANEL_H}\" \
         viewBox=\"0 0 {width} {PANEL_H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, panel) in panels.iter().enumerate() {
        draw_panel(&mut svg, panel, PANEL_W * i as f64);
    }
    svg.push_str("</svg>\n");
    std::fs::write(path, svg)
}

fn draw_panel(svg: &mut String, panel: &Panel, x0: f64) {
    let epochs = panel.curves.iter().map(|(_, v)| v.len()).max().unwrap_or(1);
    let values = panel.curves.iter().flat_map(|(_, v)| v.iter().copied());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let y_step = nice_step(hi - lo);
    let (y_lo, y_hi) = (
        (lo / y_step).floor() * y_step,
        (hi / y_step).ceil() * y_step,
    );
    let x_step = nice_step(epochs as f64).max(1.0);

    // Plot area in pixels and the maps from (epoch, value) into it.
    let (left, right) = (x0 + LEFT, x0 + PANEL_W - RIGHT);
    let (top, bottom) = (TOP, PANEL_H - BOTTOM);
    let px = |epoch: f64| left + (epoch - 1.0) / (epochs.max(2) - 1) as f64 * (right - left);
    let py = |v: f64| bottom - (v - y_lo) / (y_hi - y_lo).max(f64::MIN_POSITIVE) * (bottom - top);

    // Title on the left and the legend on the right, above the plot area.
    let _ = writeln!(
        svg,
        "<text x=\"{left}\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        top - 18.0,
        panel.title
    );
    for (k, (label, _)) in panel.curves.iter().enumerate().rev() {
        let x = right - 70.0 * (panel.curves.len() - k) as f64;
        let y = top - 22.0;
        let color = COLORS[k % COLORS.len()];
        let _ = writeln!(
            svg,
            "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2.5\"/>\
             <text x=\"{}\" y=\"{}\">{label}</text>",
            x + 18.0,
            x + 23.0,
            y + 4.0
        );
    }

    // Grid lines with their tick labels.
    let decimals = (-y_step.log10().floor()).max(0.0) as usize;
    let mut v = y_lo;
    while v <= y_hi + y_step / 2.0 {
        let y = py(v);
        let _ = writeln!(
            svg,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.decimals$}</text>",
            left - 6.0,
            y + 4.0
        );
        v += y_step;
    }
    // Epoch ticks at 1 and at the multiples of the step.
    let x_ticks = std::iter::once(1.0).chain(
        (1..)
            .map(|k| k as f64 * x_step)
            .skip_while(|&e| e <= 1.0)
            .take_while(|&e| e <= epochs as f64),
    );
    for e in x_ticks {
        let x = px(e);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{bottom}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{e}</text>",
            bottom + 5.0,
            bottom + 18.0
        );
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>",
        right - left,
        bottom - top,
        (left + right) / 2.0,
        bottom + 36.0
    );

    // The curves: a line through one marker per epoch.
    for (k, (_, values)) in panel.curves.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let points: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (px(i as f64 + 1.0), py(v)))
            .collect();
        let line: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
            line.join(" ")
        );
        for (x, y) in points {
            let _ = writeln!(
                svg,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{color}\"/>"
            );
        }
    }
}

/// A step of 1, 2 or 5 times a power of ten that cuts `range` into about five intervals.
fn nice_step(range: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let mantissa = raw / power;
    let nice = if mantissa <= 1.0 {
        1.0
    } else if mantissa <= 2.0 {
        2.0
    } else if mantissa <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}
