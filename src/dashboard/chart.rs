//! Charts as inline SVG, drawn by plotters: each citizen's running average quality on a tag,
//! settlement by settlement. plotters escapes the text it writes (labels are citizen ids or
//! tags, which come from agents' files).

use plotters::prelude::*;

/// Kelly's colours of maximum contrast, the few too pale on white left out: twenty series
/// get twenty distinct colours.
const COLOURS: [RGBColor; 20] = [
    RGBColor(0x00, 0x67, 0xA5),
    RGBColor(0xBE, 0x00, 0x32),
    RGBColor(0x00, 0x88, 0x56),
    RGBColor(0xF3, 0x84, 0x00),
    RGBColor(0x87, 0x56, 0x92),
    RGBColor(0x84, 0x84, 0x82),
    RGBColor(0x88, 0x2D, 0x17),
    RGBColor(0x8D, 0xB6, 0x00),
    RGBColor(0xE6, 0x8F, 0xAC),
    RGBColor(0x60, 0x4E, 0x97),
    RGBColor(0xF6, 0xA6, 0x00),
    RGBColor(0xB3, 0x44, 0x6C),
    RGBColor(0x2B, 0x3D, 0x26),
    RGBColor(0xE2, 0x58, 0x22),
    RGBColor(0x65, 0x45, 0x22),
    RGBColor(0xC2, 0xB2, 0x80),
    RGBColor(0xF9, 0x93, 0x79),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xDC, 0xD3, 0x00),
    RGBColor(0x5E, 0x9C, 0xC8),
];

/// The colour of series `i`: [`COLOURS`], then hues a golden angle apart.
fn colour(i: usize) -> RGBColor {
    if let Some(c) = COLOURS.get(i) {
        return *c;
    }
    let hue = (i as f64 * 137.508) % 360.0;
    let lightness = if i.is_multiple_of(2) { 0.35 } else { 0.5 };
    let (r, g, b) = HSLColor(hue / 360.0, 0.75, lightness).to_rgba().rgb();
    RGBColor(r, g, b)
}

fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

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

/// Lines of `(x, y)` points, one per label, over x in `1..=max_x` and quality 1–5, and
/// their legend as a wrapping HTML list under the SVG (inside the plot, twenty labels would
/// cover the lines and overflow it). `None` when there is nothing to draw (or plotters
/// fails, which the page reports as no chart).
pub fn quality_lines(
    series: &[(String, Vec<(usize, f64)>)],
    caption: &str,
) -> Option<maud::Markup> {
    let svg = quality_svg(series, caption)?;
    Some(maud::html! {
        figure.chart {
            (maud::PreEscaped(svg))
            ul.legend {
                @for (i, (label, _)) in series.iter().enumerate() {
                    li {
                        svg width="14" height="10" aria-hidden="true" { rect width="14" height="10" fill=(hex(colour(i))) {} }
                        " " (label)
                    }
                }
            }
        }
    })
}

fn quality_svg(series: &[(String, Vec<(usize, f64)>)], caption: &str) -> Option<String> {
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
            let colour = colour(i);
            let line = thin(points);
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                .ok()?
                .label(label.as_str());
            if points.len() <= MARKED_POINTS {
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .ok()?;
            }
        }
        root.present().ok()?;
    }
    Some(svg)
}

/// Bars of a count per day (`YYYY-MM-DD`, n), as a small inline SVG with the first and last
/// day and the highest count labelled, and each bar's day and count in its title. With nothing
/// counted it says so instead: an empty axis would show a maximum nobody reached.
pub fn daily_bars(days: &[(String, usize)]) -> maud::Markup {
    const W: usize = 420;
    const H: usize = 90;
    const BASE: usize = 72;
    let max = days.iter().map(|d| d.1).max().unwrap_or(0).max(1);
    let step = W / days.len().max(1);
    let total: usize = days.iter().map(|d| d.1).sum();
    if total == 0 {
        return maud::html! {
            p.muted.no-chart { "Nothing settled in the last " (days.len()) " days." }
        };
    }
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
    fn twenty_series_get_twenty_colours_and_a_legend_entry_each() {
        let colours: std::collections::HashSet<String> = (0..40).map(|i| hex(colour(i))).collect();
        assert_eq!(colours.len(), 40);
        assert!(!colours.contains("#ffffff"));
        let series: Vec<(String, Vec<(usize, f64)>)> = (0..20)
            .map(|i| (format!("citizen-{i:02}"), vec![(1, 3.0), (2, 4.0)]))
            .collect();
        let html = quality_lines(&series, "x").unwrap().into_string();
        let legend = &html[html.find("<ul class=\"legend\">").unwrap()..];
        assert_eq!(legend.matches("<li>").count(), 20);
        for i in 0..20 {
            assert!(legend.contains(&hex(colour(i))), "{i}");
            assert!(legend.contains(&format!("citizen-{i:02}")), "{i}");
        }
    }

    #[test]
    fn days_with_nothing_counted_draw_no_axis() {
        let days: Vec<(String, usize)> = (1..=14).map(|d| (format!("2026-11-{d:02}"), 0)).collect();
        let html = daily_bars(&days).into_string();
        assert!(
            !html.contains("<svg") && !html.contains("max 1/day"),
            "{html}"
        );
        assert!(
            html.contains("Nothing settled in the last 14 days."),
            "{html}"
        );
        let mut one = days.clone();
        one[3].1 = 2;
        let html = daily_bars(&one).into_string();
        assert!(
            html.contains("<svg") && html.contains("max 2/day · 2 in all"),
            "{html}"
        );
    }

    #[test]
    fn labels_are_escaped_in_the_svg_and_the_legend() {
        let svg = quality_lines(
            &[("<script>alert(1)</script>".into(), vec![(1, 4.0), (2, 3.5)])],
            "tag <b>",
        )
        .unwrap()
        .into_string();
        assert!(
            svg.starts_with("<figure class=\"chart\"><svg"),
            "{}",
            &svg[..80]
        );
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
    }

    #[test]
    fn long_histories_are_drawn() {
        let pts: Vec<(usize, f64)> = (1..2000).map(|i| (i, 3.0)).collect();
        let svg = quality_svg(&[("a".into(), pts)], "x").unwrap();
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
