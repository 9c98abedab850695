//! The Internet checksum (RFC 1071) of a list of fixed-width values, what the architecture's
//! `update_checksum`/`verify_checksum` compute: the values' bits concatenated in order (most
//! significant first, as on the wire), zero-padded at the end to a multiple of 16, summed as
//! 16-bit words in one's complement, the sum complemented.

/// The checksum of `(width, bits)` values concatenated: each contributes its low `width` bits.
pub fn internet_checksum(values: &[(u32, u128)]) -> u16 {
    let mut sum: u64 = 0;
    let mut word: u32 = 0;
    let mut filled: u32 = 0;
    for (width, bits) in values {
        for i in (0..*width).rev() {
            let bit = (bits >> i.min(127)) & 1;
            word = (word << 1) | bit as u32;
            filled += 1;
            if filled == 16 {
                sum = sum.saturating_add(u64::from(word));
                (word, filled) = (0, 0);
            }
        }
    }
    if filled > 0 {
        sum = sum.saturating_add(u64::from(word << (16 - filled)));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_1071_example_and_an_ipv4_header() {
        // RFC 1071 §3's example words sum to 0xddf2; the checksum is its complement.
        let words = [0x0001, 0xf203, 0xf4f5, 0xf6f7].map(|w| (16, w));
        assert_eq!(internet_checksum(&words), !0xddf2);
        // A real IPv4 header (checksum field left out) whose checksum is 0xb861.
        let fields = [
            (4, 4),
            (4, 5),
            (8, 0),
            (16, 0x0073),
            (16, 0),
            (3, 2),
            (13, 0),
            (8, 0x40),
            (8, 0x11),
            (32, 0xc0a8_0001),
            (32, 0xc0a8_00c7),
        ];
        assert_eq!(internet_checksum(&fields), 0xb861);
    }

    #[test]
    fn odd_widths_are_padded_at_the_end() {
        // 8 bits 0xab then nothing: the word is 0xab00.
        assert_eq!(internet_checksum(&[(8, 0xab)]), !0xab00);
        // 12 bits then 4 bits make one word.
        assert_eq!(internet_checksum(&[(12, 0xabc), (4, 0xd)]), !0xabcd);
        assert_eq!(internet_checksum(&[]), 0xffff);
    }
}
