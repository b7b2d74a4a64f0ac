//! `decimal`: an integer's decimal digits without the formatting machinery (the audit line and
//! the answer memory's keys write several per call).

/// The decimal digits of `n` (ASCII, no sign, no leading zero; `0` for zero), written at the end
/// of `buf`.
#[inline]
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn digits_as_display_writes_them() {
        for n in [0, 7, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string().as_bytes());
        }
    }
}
