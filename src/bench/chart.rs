//! The bench's learning curves as a PNG, drawn by plotters' bitmap backend. The text is set in
//! DejaVu Sans Mono, embedded (`assets/`, its licence beside it), so the chart looks the same on
//! every machine and needs no system font.

use plotters::prelude::*;
use std::path::Path;

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 620;
const FONT: &[u8] = include_bytes!("../../assets/DejaVuSansMono.ttf");

/// One curve.
pub struct Series {
    pub label: String,
    pub colour: [u8; 3],
    pub points: Vec<f64>,
    pub thick: bool,
}

/// Makes the embedded font plotters' `sans-serif` (once per process); every chart needs it to
/// measure and draw text.
pub fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            tracing::warn!("the embedded chart font could not be read; the plot has no text");
        }
    });
}

/// Draws `series` (y per settlement index) under the `title` lines into a PNG at `path`, with
/// a vertical line at `marker` (the scenario's change point).
pub fn line_chart(
    path: &Path,
    title: &[String],
    series: &[Series],
    marker: Option<usize>,
) -> Result<(), String> {
    register_font();
    let n = series
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(0)
        .max(2);
    // The first few running means are single settlements; leave them out of the y range.
    let skip = n / 20;
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.points.iter().skip(skip).copied())
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        ((lo * 4.0).floor() / 4.0, (hi * 4.0).ceil() / 4.0)
    } else {
        (1.0, 5.0)
    };
    let err = |e: &dyn std::fmt::Display| format!("cannot draw the plot: {e}");
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(20 + 22 * title.len() as u32);
    for (i, line) in title.iter().enumerate() {
        top.draw(&Text::new(
            line.clone(),
            (20, 12 + 22 * i as i32),
            ("sans-serif", 18).into_font().color(&BLACK),
        ))
        .map_err(|e| err(&e))?;
    }
    let mut chart = ChartBuilder::on(&body)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0..n - 1, lo..hi)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("contracts settled")
        .y_desc("running mean quality")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;
    if let Some(at) = marker.filter(|&at| at < n) {
        chart
            // Dashed and darker than the grid, as the title says, so it is not read as one
            // of the grid's lines.
            .draw_series(DashedLineSeries::new(
                [(at, lo), (at, hi)],
                8,
                6,
                RGBColor(60, 60, 60).stroke_width(2),
            ))
            .map_err(|e| err(&e))?;
    }
    for s in series {
        let colour = RGBColor(s.colour[0], s.colour[1], s.colour[2]);
        let style = colour.stroke_width(if s.thick { 3 } else { 1 });
        let points = s
            .points
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(k, &v)| (k, v.clamp(lo, hi)));
        chart
            .draw_series(LineSeries::new(points, style))
            .map_err(|e| err(&e))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_png_with_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("curves.png");
        let series = vec![
            Series {
                label: "posterior".into(),
                colour: [0, 114, 178],
                points: (0..200).map(|i| 3.0 + f64::from(i) / 200.0).collect(),
                thick: true,
            },
            Series {
                label: "random".into(),
                colour: [230, 159, 0],
                points: vec![3.0; 200],
                thick: false,
            },
        ];
        line_chart(&path, &["title".into(), "sizes".into()], &series, Some(100)).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        assert!(
            bytes.len() > 5_000,
            "something was drawn: {} bytes",
            bytes.len()
        );
    }
}
