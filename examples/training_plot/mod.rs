//! Training curves drawn with `plotters` as an SVG image, side by side in panels: shared by the
//! `digits`, `cnn_digits` and `char_lm` examples.

use std::path::Path;

use plotters::prelude::*;

/// One chart: a title, the label of its horizontal axis, and its curves, each a label and its
/// points `(x, y)`.
pub struct Panel<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub curves: Vec<(&'a str, Vec<(f64, f64)>)>,
}

const PANEL_SIZE: (u32, u32) = (520, 360);
const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

/// Writes the panels side by side to `path` as an SVG image, creating its folder if need be.
pub fn write_svg(path: &Path, panels: &[Panel]) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let size = (PANEL_SIZE.0 * panels.len() as u32, PANEL_SIZE.1);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, panel) in root.split_evenly((1, panels.len())).iter().zip(panels) {
        draw_panel(area, panel)?;
    }
    root.present()?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let points = || panel.curves.iter().flat_map(|(_, p)| p.iter().copied());
    let (x_lo, x_hi) = range(points().map(|(x, _)| x), 0.0);
    let (y_lo, y_hi) = range(points().map(|(_, y)| y), 0.05);
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, ("sans-serif", 17))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_label)
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&|x| format!("{x}"))
        .label_style(("sans-serif", 12))
        .light_line_style(WHITE)
        .draw()?;
    for (k, (label, points)) in panel.curves.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(*label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(legend_position(panel, (y_lo + y_hi) / 2.0))
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

/// The legend's corner on the right: the lower one when the curves end above `middle`.
fn legend_position(panel: &Panel, middle: f64) -> SeriesLabelPosition {
    let ends = panel.curves.iter().filter_map(|(_, p)| p.last());
    let (above, below) = ends.fold(
        (0, 0),
        |(a, b), &(_, y)| {
            if y > middle {
                (a + 1, b)
            } else {
                (a, b + 1)
            }
        },
    );
    if above > below {
        SeriesLabelPosition::LowerRight
    } else {
        SeriesLabelPosition::UpperRight
    }
}

/// The smallest and largest of `values`, widened by `margin` of their distance on each side
/// (and to a unit interval when they are all equal).
fn range(values: impl Iterator<Item = f64>, margin: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo >= hi {
        let mid = if lo.is_finite() { lo } else { 0.0 };
        return (mid - 0.5, mid + 0.5);
    }
    let pad = (hi - lo) * margin;
    (lo - pad, hi + pad)
}
