//! An image sent to a vision-capable model (a screenshot of the visible part of a page):
//! its MIME type, its bytes as base64 and its size, plus the little base64 and PNG reading
//! the capture needs (a data URL in, the PNG's size from its header). Images travel only in
//! live requests: nothing persisted ever holds one. Pure.

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// The longest side an image sent to a model may have, in pixels (Anthropic's recommended
/// maximum, <https://docs.anthropic.com/en/docs/build-with-claude/vision>; OpenAI and Gemini
/// scale larger images down themselves).
pub const MAX_IMAGE_SIDE: u32 = 1_568;

/// One image of a chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Image {
    /// `image/png`.
    pub mime_type: String,
    /// The bytes, base64 (standard alphabet, padded), without a `data:` prefix.
    pub data: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Image {
    /// The image as a `data:` URL (OpenAI's `image_url`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }

    /// A PNG from a `data:image/png;base64,...` URL: `None` unless it is one, with a
    /// readable header.
    pub fn from_png_data_url(url: &str) -> Option<Self> {
        let data = url.strip_prefix("data:image/png;base64,")?;
        let head = base64_decode(data.get(..32)?)?;
        let (width, height) = png_size(&head)?;
        Some(Self {
            mime_type: "image/png".into(),
            data: data.to_string(),
            width,
            height,
        })
    }

    /// Estimated prompt tokens: Anthropic's rule of thumb, width × height / 750
    /// (<https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs>),
    /// at least 85 (OpenAI's low-detail cost).
    pub fn estimated_tokens(&self) -> u64 {
        (u64::from(self.width) * u64::from(self.height) / 750).max(85)
    }
}

/// The size `(width, height)` an image of `width` × `height` is scaled to so that its long
/// side is at most [`MAX_IMAGE_SIDE`] (unchanged when it already fits; never below 1 px).
pub fn fitted_size(width: u32, height: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= MAX_IMAGE_SIDE {
        return (width, height);
    }
    let scale = |side: u32| {
        let scaled = u64::from(side) * u64::from(MAX_IMAGE_SIDE) / u64::from(long);
        u32::try_from(scaled).unwrap_or(MAX_IMAGE_SIDE).max(1)
    };
    (scale(width), scale(height))
}

/// The size in a PNG's header (signature, then the `IHDR` chunk), from its first 24 bytes.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    if bytes.len() < 24 || bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(16), word(20)))
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` as standard, padded base64.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` on any other character.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)?;
        acc = (acc << 6) | u32::try_from(v).ok()?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG (the smallest valid one).
    const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    #[test]
    fn base64_round_trips() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let text = base64_encode(&bytes);
            assert_eq!(text.len() % 4, 0);
            assert_eq!(base64_decode(&text).as_deref(), Some(&bytes[..]));
        }
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        assert_eq!(base64_decode("not base64!"), None);
    }

    #[test]
    fn a_png_data_url_gives_its_size() {
        let image =
            Image::from_png_data_url(&format!("data:image/png;base64,{PIXEL}")).expect("a png");
        assert_eq!((image.width, image.height), (1, 1));
        assert_eq!(image.data, PIXEL);
        assert!(image.data_url().starts_with("data:image/png;base64,iVBOR"));
        assert_eq!(
            Image::from_png_data_url("data:image/jpeg;base64,/9j/4AAQ"),
            None
        );
        assert_eq!(Image::from_png_data_url("data:image/png;base64,AAAA"), None);
    }

    #[test]
    fn large_images_fit_the_long_side() {
        assert_eq!(fitted_size(1280, 720), (1280, 720));
        assert_eq!(fitted_size(3136, 1960), (1568, 980));
        assert_eq!(fitted_size(1000, 4000), (392, 1568));
        assert_eq!(fitted_size(100_000, 1), (1568, 1));
    }
}
