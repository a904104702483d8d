//! PNG line plots on log-log axes for the suite reports, drawn with `plotters`. Text is set in
//! DejaVu Sans, read from the system's fonts (Debian's `fonts-dejavu-core`, which
//! `scripts/test.sh` installs if missing) and rendered by `ab_glyph`.

#[cfg(feature = "plots")]
use crate::error::CliError;
use crate::error::CliResult;
use std::path::Path;

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's label.
    pub label: String,
    /// (x, y) points, both positive; drawn in order of x.
    pub points: Vec<(f64, f64)>,
    /// Dashed (the paper's figures) or solid (ours).
    pub dashed: bool,
    /// The series' colour key: series with one key share a colour, and a plot's keys get the
    /// palette's colours in order of first appearance.
    pub colour: usize,
}

/// A plot: a title, axis labels and its lines.
#[derive(Clone, Debug)]
pub struct Plot {
    /// The title.
    pub title: String,
    /// The x axis's label.
    pub x_label: String,
    /// The y axis's label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// The range [lo, hi] of positive values, widened by a factor of 1.5 each way.
#[cfg(feature = "plots")]
fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    (hi > 0.0).then_some((lo / 1.5, hi * 1.5))
}

/// Where DejaVu Sans is found.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers DejaVu Sans as plotters' "sans-serif" once.
#[cfg(feature = "plots")]
fn register_font() -> CliResult<()> {
    use std::sync::OnceLock;
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let bytes = FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
            .ok_or_else(|| {
                format!(
                    "the plots need the DejaVu Sans font (Debian: apt-get install \
                     fonts-dejavu-core); not found at {}",
                    FONT_PATHS.join(", ")
                )
            })?;
        // plotters keeps the font for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
            .map_err(|_| "DejaVu Sans is not a readable font".to_owned())
    })
    .clone()
    .map_err(CliError::Usage)
}

/// The chart's size in pixels; the legend is a column of [`LEGEND`] pixels to its right.
#[cfg(feature = "plots")]
const WIDTH: u32 = 900;
#[cfg(feature = "plots")]
const HEIGHT: u32 = 640;
/// The legend column's width in pixels.
#[cfg(feature = "plots")]
const LEGEND: u32 = 380;

/// Draws `plot` to `path` (PNG, chart and legend side by side); a plot without a positive
/// point is not drawn and `Ok(false)` is returned.
#[cfg(feature = "plots")]
pub fn draw(path: &Path, plot: &Plot) -> CliResult<bool> {
    use plotters::prelude::*;
    register_font()?;
    let fail = |e: &dyn std::fmt::Display| {
        CliError::Usage(format!("{}: cannot draw the plot: {e}", path.display()))
    };
    let points = || plot.series.iter().flat_map(|s| s.points.iter());
    let (Some(xr), Some(yr)) = (range(points().map(|p| p.0)), range(points().map(|p| p.1))) else {
        return Ok(false);
    };
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
    ];
    // Colours in order of first appearance in this plot, so that a plot's protocols differ.
    let mut seen: Vec<usize> = Vec::new();
    let colour_of = |c: usize, seen: &mut Vec<usize>| {
        let k = seen.iter().position(|&x| x == c).unwrap_or_else(|| {
            seen.push(c);
            seen.len() - 1
        });
        palette[k % palette.len()]
    };
    let colours: Vec<RGBColor> = plot
        .series
        .iter()
        .map(|s| colour_of(s.colour, &mut seen))
        .collect();
    // Drawn beside the target and renamed into place: the plot is there whole or not at all.
    let name = path
        .file_name()
        .map_or("plot".into(), |n| n.to_string_lossy());
    let partial = path.with_file_name(format!(".{name}.partial.png"));
    {
        let root = BitMapBackend::new(&partial, (WIDTH + LEGEND, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (left, right) = root.split_horizontally(WIDTH);
        let mut chart = ChartBuilder::on(&left)
            .caption(&plot.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(75)
            .build_cartesian_2d((xr.0..xr.1).log_scale(), (yr.0..yr.1).log_scale())
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc(plot.x_label.as_str())
            .y_desc(plot.y_label.as_str())
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .x_labels(8)
            .x_label_formatter(&|x| short(*x))
            .y_label_formatter(&|y| short(*y))
            .draw()
            .map_err(|e| fail(&e))?;
        for (s, &colour) in plot.series.iter().zip(&colours) {
            let mut pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite())
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let style = ShapeStyle::from(&colour).stroke_width(2);
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, style))
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), style))
            }
            .map_err(|e| fail(&e))?;
            if s.dashed {
                chart.draw_series(
                    pts.iter()
                        .map(|&p| Circle::new(p, 4, colour.stroke_width(1))),
                )
            } else {
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            }
            .map_err(|e| fail(&e))?;
        }
        // The legend, in a column of its own right of the chart: one line per series.
        let rows = plot.series.len().max(1) as i32;
        let step = ((HEIGHT as i32 - 40) / rows).clamp(8, 22);
        let size = (step - 4).clamp(8, 15);
        for (i, (s, &colour)) in plot.series.iter().zip(&colours).enumerate() {
            let y = 30 + i as i32 * step;
            let line = colour.stroke_width(2);
            if s.dashed {
                right
                    .draw(&PathElement::new(vec![(8, y), (15, y)], line))
                    .and_then(|_| right.draw(&PathElement::new(vec![(20, y), (27, y)], line)))
            } else {
                right.draw(&PathElement::new(vec![(8, y), (27, y)], line))
            }
            .map_err(|e| fail(&e))?;
            right
                .draw(&Text::new(
                    s.label.clone(),
                    (34, y - size / 2 - 1),
                    ("sans-serif", size),
                ))
                .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    std::fs::rename(&partial, path).map_err(|source| CliError::File {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(true)
}

/// Without the `plots` feature nothing is drawn.
#[cfg(not(feature = "plots"))]
pub fn draw(_path: &Path, _plot: &Plot) -> CliResult<bool> {
    Ok(false)
}

/// An axis label: 2^k for powers of two from 2^10 up, else a short decimal.
#[cfg(feature = "plots")]
fn short(v: f64) -> String {
    let l = v.log2();
    if v >= 1024.0 && (l - l.round()).abs() < 1e-9 {
        return format!("2^{}", l.round() as i64);
    }
    if v >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_png_and_skips_an_empty_plot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.png");
        let mut plot = Plot {
            title: "runtime".into(),
            x_label: "n".into(),
            y_label: "s".into(),
            series: vec![Series {
                label: "ours".into(),
                points: vec![(0.0, 1.0), (-1.0, 2.0)],
                dashed: false,
                colour: 0,
            }],
        };
        assert!(!draw(&path, &plot).unwrap());
        assert!(!path.exists());
        plot.series[0].points = vec![(1024.0, 0.1), (65536.0, 2.0)];
        plot.series.push(Series {
            label: "paper".into(),
            points: vec![(1024.0, 1.0), (65536.0, 30.0)],
            dashed: true,
            colour: 0,
        });
        #[cfg(feature = "plots")]
        {
            assert!(draw(&path, &plot).unwrap());
            let png = std::fs::read(&path).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
            assert_eq!(short(65536.0), "2^16");
            assert_eq!(short(2e6), "2M");
            assert_eq!(short(0.5), "0.50");
        }
    }
}
