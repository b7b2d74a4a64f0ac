//! Lowercase hex: the digests of a paused turn and its sealed values
//! (`approval/pending.rs`, `approval/seal.rs`).

/// Lowercase hex of `bytes`: two digits per byte.
pub(crate) fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    text
}

/// The bytes `text` spells, two hex digits (either case) per byte; `None` for an odd length
/// or a character that is not a hex digit.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let value = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    digits
        .chunks_exact(2)
        .map(|pair| Some(value(pair[0])? << 4 | value(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        assert_eq!(encode(&[0x00, 0x7f, 0xa5, 0xff]), "007fa5ff");
        assert_eq!(decode("007fa5ff"), Some(vec![0x00, 0x7f, 0xa5, 0xff]));
        assert_eq!(decode("007FA5FF"), Some(vec![0x00, 0x7f, 0xa5, 0xff]));
        assert_eq!(decode(""), Some(vec![]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("0g"), None);
        assert_eq!(decode("+1"), None);
    }
}
