//! Charts as inline SVG, drawn by plotters: each citizen's running average quality on a tag,
//! settlement by settlement. plotters escapes the text it writes (labels are citizen ids or
//! tags, which come from agents' files).

use plotters::prelude::*;

/// Distinguishable line colours, cycled.
const COLOURS: [RGBColor; 8] = [
    RGBColor(34, 85, 170),
    RGBColor(200, 80, 30),
    RGBColor(26, 127, 55),
    RGBColor(150, 40, 160),
    RGBColor(180, 140, 0),
    RGBColor(0, 140, 150),
    RGBColor(120, 120, 120),
    RGBColor(200, 30, 90),
];

/// A line keeps at most this many points (a long history is sampled evenly, its last point
/// kept), so a page stays small with thousands of settlements.
const MAX_POINTS: usize = 300;

/// Series this short get a dot per settlement.
const MARKED_POINTS: usize = 60;

fn thin(points: &[(usize, f64)]) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let mut out: Vec<(f64, f64)> = points
        .iter()
        .step_by(step)
        .map(|&(x, y)| (x as f64, y))
        .collect();
    if let Some(&(x, y)) = points.last() {
        if out.last().map(|p| p.0) != Some(x as f64) {
            out.push((x as f64, y));
        }
    }
    out
}

/// Lines of `(x, y)` points, one per label, over x in `1..=max_x` and quality 1–5. `None`
/// when there is nothing to draw (or plotters fails, which the page reports as no chart).
pub fn quality_lines(series: &[(String, Vec<(usize, f64)>)], caption: &str) -> Option<String> {
    let max_x = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .max()?;
    // Text is measured with the embedded font (plotters has one font system for every backend).
    crate::bench::chart::register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 300)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(36)
            .build_cartesian_2d(0.5f64..(max_x as f64 + 0.5), 1f64..5.05f64)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("settlements on this tag")
            .y_desc("avg quality")
            .x_labels(max_x.min(10))
            .y_labels(5)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .ok()?;
        for (i, (label, points)) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let line = thin(points);
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                .ok()?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            if points.len() <= MARKED_POINTS {
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .ok()?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// Bars of a count per day (`YYYY-MM-DD`, n), as a small inline SVG with the first and last
/// day and the highest count labelled, and each bar's day and count in its title.
pub fn daily_bars(days: &[(String, usize)]) -> maud::Markup {
    const W: usize = 420;
    const H: usize = 90;
    const BASE: usize = 72;
    let max = days.iter().map(|d| d.1).max().unwrap_or(0).max(1);
    let step = W / days.len().max(1);
    let total: usize = days.iter().map(|d| d.1).sum();
    maud::html! {
        svg.bars xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) role="img"
            aria-label=(format!("{total} settled over {} days", days.len())) {
            @for (i, (day, n)) in days.iter().enumerate() {
                @let h = n * (BASE - 12) / max;
                rect x=(i * step + 2) y=(BASE - h) width=(step.saturating_sub(4)) height=(h.max(1)) fill="#2255aa" {
                    title { (day) ": " (n) }
                }
            }
            text x="0" y=(H - 4) font-size="11" fill="#5d6875" { (days.first().map_or("", |d| d.0.as_str())) }
            text x=(W) y=(H - 4) font-size="11" fill="#5d6875" text-anchor="end" { (days.last().map_or("", |d| d.0.as_str())) }
            text x=(W) y="10" font-size="11" fill="#5d6875" text-anchor="end" { "max " (max) "/day · " (total) " in all" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_in_the_svg() {
        let svg = quality_lines(
            &[("<script>alert(1)</script>".into(), vec![(1, 4.0), (2, 3.5)])],
            "tag <b>",
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
    }

    #[test]
    fn long_histories_are_drawn() {
        let pts: Vec<(usize, f64)> = (1..2000).map(|i| (i, 3.0)).collect();
        let svg = quality_lines(&[("a".into(), pts)], "x").unwrap();
        assert!(svg.len() < 40_000, "sampled: {} bytes", svg.len());
        assert_eq!(
            thin(&(1..=2000).map(|i| (i, 1.0)).collect::<Vec<_>>()).last(),
            Some(&(2000.0, 1.0))
        );
    }

    #[test]
    fn nothing_to_draw_is_no_chart() {
        assert!(quality_lines(&[], "x").is_none());
    }
}
