//! A small line chart drawn into a palette PNG, for the bench's learning curves.
//!
//! Written out here (a 5×7 bitmap font, Bresenham lines, deflate with fixed Huffman codes and
//! run-length matches) so the bench needs no plotting or image crate. It draws one kind of
//! chart; it is not a general graphics library.

const WIDTH: usize = 1000;
const HEIGHT: usize = 620;
const LEFT: usize = 80;
const RIGHT: usize = 230;
const TOP: usize = 50;
const BOTTOM: usize = 60;
const SCALE: usize = 2;

const WHITE: u8 = 0;
const BLACK: u8 = 1;
const GRID: u8 = 2;
const FIRST_SERIES: u8 = 3;

/// One curve.
pub struct Series {
    pub label: String,
    pub colour: [u8; 3],
    pub points: Vec<f64>,
    pub thick: bool,
}

struct Canvas {
    pixels: Vec<u8>,
}

impl Canvas {
    fn set(&mut self, x: i64, y: i64, c: u8) {
        if x >= 0 && y >= 0 && (x as usize) < WIDTH && (y as usize) < HEIGHT {
            self.pixels[y as usize * WIDTH + x as usize] = c;
        }
    }

    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: u8, thick: bool) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            if thick {
                self.set(x + 1, y, c);
                self.set(x, y + 1, c);
                self.set(x + 1, y + 1, c);
            }
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn text(&mut self, x: usize, y: usize, text: &str, c: u8) {
        for (i, ch) in text.chars().enumerate() {
            let rows = glyph(ch);
            for (r, bits) in rows.iter().enumerate() {
                for col in 0..5 {
                    if bits & (0x10 >> col) != 0 {
                        for dy in 0..SCALE {
                            for dx in 0..SCALE {
                                let px = x + i * 6 * SCALE + col * SCALE + dx;
                                let py = y + r * SCALE + dy;
                                self.set(px as i64, py as i64, c);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn text_width(text: &str) -> usize {
    text.chars().count() * 6 * SCALE
}

/// Draws the chart and returns the PNG file's bytes.
pub fn line_chart(title: &[String], series: &[Series], marker: Option<usize>) -> Vec<u8> {
    let mut canvas = Canvas {
        pixels: vec![WHITE; WIDTH * HEIGHT],
    };
    let n = series
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(0)
        .max(2);
    // The first few running means are single settlements; leave them out of the y range.
    let skip = n / 20;
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().skip(skip).copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        ((lo * 4.0).floor() / 4.0, (hi * 4.0).ceil() / 4.0)
    } else {
        (1.0, 5.0)
    };
    let plot_w = (WIDTH - LEFT - RIGHT) as f64;
    let plot_h = (HEIGHT - TOP - BOTTOM) as f64;
    let px = |k: usize| LEFT as i64 + ((k as f64) / (n - 1) as f64 * plot_w).round() as i64;
    let py = |v: f64| {
        let v = v.clamp(lo, hi);
        TOP as i64 + ((hi - v) / (hi - lo) * plot_h).round() as i64
    };

    // Horizontal grid every 0.25 quality, labelled.
    let mut v = lo;
    while v <= hi + 1e-9 {
        let y = py(v);
        canvas.line((LEFT as i64, y), ((WIDTH - RIGHT) as i64, y), GRID, false);
        let label = format!("{v:.2}");
        let x = LEFT.saturating_sub(text_width(&label) + 8);
        canvas.text(x, (y as usize).saturating_sub(7), &label, BLACK);
        v += 0.25;
    }
    // Vertical ticks at round contract counts.
    let step = [10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000]
        .into_iter()
        .find(|s| n / s <= 8)
        .unwrap_or(n);
    let mut k = 0;
    while k <= n {
        // Point k-1 is the running mean after k contracts.
        let x = if k == 0 { LEFT as i64 } else { px(k - 1) };
        canvas.line(
            (x, (HEIGHT - BOTTOM) as i64),
            (x, (HEIGHT - BOTTOM + 6) as i64),
            BLACK,
            false,
        );
        let label = k.to_string();
        canvas.text(
            (x as usize).saturating_sub(text_width(&label) / 2),
            HEIGHT - BOTTOM + 12,
            &label,
            BLACK,
        );
        k += step;
    }
    let caption = "contracts";
    canvas.text(
        LEFT + (plot_w as usize - text_width(caption)) / 2,
        HEIGHT - 22,
        caption,
        BLACK,
    );
    // Axes.
    let (l, r, t, b) = (
        LEFT as i64,
        (WIDTH - RIGHT) as i64,
        TOP as i64,
        (HEIGHT - BOTTOM) as i64,
    );
    canvas.line((l, t), (l, b), BLACK, false);
    canvas.line((l, b), (r, b), BLACK, false);
    if let Some(m) = marker {
        let x = px(m);
        let mut y = t;
        while y < b {
            canvas.line((x, y), (x, (y + 5).min(b)), BLACK, false);
            y += 10;
        }
    }
    // Curves: thin ones first, the highlighted one on top.
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| series[i].thick);
    for &i in &order {
        let s = &series[i];
        let colour = FIRST_SERIES + i as u8;
        let mut prev: Option<(i64, i64)> = None;
        for (k, &v) in s.points.iter().enumerate() {
            if !v.is_finite() {
                continue;
            }
            let p = (px(k), py(v));
            if let Some(q) = prev {
                canvas.line(q, p, colour, s.thick);
            }
            prev = Some(p);
        }
    }
    // Legend.
    for (i, s) in series.iter().enumerate() {
        let y = TOP + 10 + i * 26;
        let x = WIDTH - RIGHT + 20;
        let colour = FIRST_SERIES + i as u8;
        for dy in 0..4 {
            canvas.line(
                (x as i64, (y + 5 + dy) as i64),
                ((x + 28) as i64, (y + 5 + dy) as i64),
                colour,
                false,
            );
        }
        canvas.text(x + 36, y, &s.label, BLACK);
    }
    for (i, line) in title.iter().enumerate() {
        canvas.text(LEFT, 4 + i * 20, line, BLACK);
    }

    let mut palette: Vec<[u8; 3]> = vec![[255, 255, 255], [0, 0, 0], [225, 225, 225]];
    palette.extend(series.iter().map(|s| s.colour));
    encode(&canvas.pixels, &palette)
}

/// 5×7 glyphs, one byte per row, bit 4 leftmost. Lowercase is drawn as uppercase.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        '-' => [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        ',' => [0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08],
        ':' => [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
        '(' => [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '/' => [0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00],
        '%' => [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        '=' => [0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00],
        _ => [0; 7],
    }
}

/// A PNG of 8-bit palette indices (`pixels` row by row, WIDTH × HEIGHT).
fn encode(pixels: &[u8], palette: &[[u8; 3]]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(pixels.len() + HEIGHT);
    for row in pixels.chunks(WIDTH) {
        raw.push(0); // filter: none
        raw.extend_from_slice(row);
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&(WIDTH as u32).to_be_bytes());
    ihdr.extend_from_slice(&(HEIGHT as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 3, 0, 0, 0]); // 8-bit, palette, deflate, adaptive, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"PLTE", &palette.concat());
    chunk(&mut out, b"IDAT", &zlib(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= (value as u64) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code goes most significant bit first.
    fn code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    fn symbol(&mut self, sym: u32) {
        match sym {
            0..=143 => self.code(0x30 + sym, 8),
            144..=255 => self.code(0x190 + sym - 144, 9),
            256..=279 => self.code(sym - 256, 7),
            _ => self.code(0xC0 + sym - 280, 8),
        }
    }
}

const LEN_BASE: [u32; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];

/// zlib stream: one fixed-Huffman deflate block whose only matches repeat the previous byte.
fn zlib(data: &[u8]) -> Vec<u8> {
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    bits.put(1, 1); // final block
    bits.put(1, 2); // fixed Huffman codes
    let mut i = 0;
    while i < data.len() {
        let mut run = 0;
        if i > 0 {
            while i + run < data.len() && run < 258 && data[i + run] == data[i - 1] {
                run += 1;
            }
        }
        if run >= 3 {
            let idx = LEN_BASE
                .iter()
                .rposition(|&b| b as usize <= run)
                .expect("run >= 3");
            bits.symbol(257 + idx as u32);
            bits.put(run as u32 - LEN_BASE[idx], LEN_EXTRA[idx]);
            bits.code(0, 5); // distance code 0: distance 1
            i += run;
        } else {
            bits.symbol(data[i] as u32);
            i += 1;
        }
    }
    bits.symbol(256);
    if bits.n > 0 {
        bits.put(0, 8 - bits.n);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + byte as u32) % 65521;
        b = (b + a) % 65521;
    }
    let mut out = bits.out;
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn chart_is_a_png() {
        let s = Series {
            label: "x".into(),
            colour: [1, 2, 3],
            points: vec![3.0, 3.5, 4.0],
            thick: true,
        };
        let bytes = line_chart(&["t".to_string()], &[s], Some(1));
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(bytes.ends_with(&[0xAE, 0x42, 0x60, 0x82])); // IEND's CRC
    }
}
