//! Bytes as hex text, the one hex parser of linerate: packets on the command line and in packets
//! files, map keys and values, MAC addresses.

/// Text that is not hex bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    #[error("odd number of hex digits ({count})")]
    OddDigits { count: usize },
    /// The pair of characters starting at character `at` (counted among the digits, separators
    /// removed) is not a hex byte.
    #[error("`{pair}` at character {at} is not hex")]
    NotHex { pair: String, at: usize },
}

/// Parses hex bytes. Blanks and colons between digits are ignored (`0a 0b`, `0a:0b`), as is a
/// leading `0x`; digits may be upper or lower case.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let digits: Vec<char> = text
        .trim()
        .trim_start_matches("0x")
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    if digits.len() % 2 == 1 {
        return Err(HexError::OddDigits {
            count: digits.len(),
        });
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            let value = |c: &char| c.to_digit(16);
            match (pair.first().and_then(value), pair.get(1).and_then(value)) {
                (Some(high), Some(low)) => Ok((high * 16 + low) as u8),
                _ => Err(HexError::NotHex {
                    pair: pair.iter().collect(),
                    at: 2 * i,
                }),
            }
        })
        .collect()
}

/// Lower-case hex of bytes, without separators.
pub fn to_hex(bytes: &[u8]) -> String {
    // Without a `format!` per byte: listing a map of 100,000 entries hexes millions of bytes.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_separators_and_rejects_garbage() {
        assert_eq!(parse_hex("0x0a 0B:ff").unwrap(), vec![0x0a, 0x0b, 0xff]);
        assert_eq!(
            parse_hex("abc").unwrap_err().to_string(),
            "odd number of hex digits (3)"
        );
        assert_eq!(
            parse_hex("zz").unwrap_err().to_string(),
            "`zz` at character 0 is not hex"
        );
        // Neither a sign nor a character wider than a byte passes for a digit.
        assert_eq!(
            parse_hex("+5").unwrap_err().to_string(),
            "`+5` at character 0 is not hex"
        );
        assert_eq!(
            parse_hex("aé1b").unwrap_err().to_string(),
            "`aé` at character 0 is not hex"
        );
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,64}") {
            let _ = parse_hex(&text);
        }

        #[test]
        fn round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(parse_hex(&to_hex(&bytes)).unwrap(), bytes);
        }
    }
}
