//! Azure's date-time stamps to integer nanoseconds: `YYYY-MM-DD HH:MM:SS`,
//! an optional fraction of up to 9 digits (Azure writes 7 in 2023 and 6 in
//! 2024) and an optional zone. The grammar is checked here, strictly, field
//! by field; the calendar (month lengths, leap years, days since 1970) is
//! `jiff`'s.

use jiff::civil::DateTime;

/// Nanoseconds since 1970-01-01 00:00 UTC of `YYYY-MM-DD HH:MM:SS`, with an
/// optional fraction of 1 to 9 digits and an optional zone (`Z`, `+HH:MM`,
/// `+HHMM`, `+HH`); `T` may replace the space. A date without a zone is
/// taken as UTC (only differences matter here).
pub(crate) fn parse_datetime(text: &str) -> Option<i128> {
    let b = text.trim().as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i128> {
        let part = b.get(range)?;
        part.iter().all(u8::is_ascii_digit).then(|| {
            part.iter()
                .fold(0i128, |n, d| n * 10 + i128::from(d - b'0'))
        })
    };
    let punct = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(punct(4, b"-") && punct(7, b"-") && punct(10, b" T") && punct(13, b":") && punct(16, b":"))
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let mut i = 19;
    let mut fraction_ns = 0;
    if punct(i, b".") {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let len = end - start;
        if len == 0 || len > 9 {
            return None;
        }
        fraction_ns = digits(start..end)? * 10i128.pow(9 - len as u32);
        i = end;
    }
    let offset_s = match &b[i..] {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest {
                [_, _] => (digits(i + 1..i + 3)?, 0),
                [_, _, b':', _, _] => (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?),
                [_, _, _, _] => (digits(i + 1..i + 3)?, digits(i + 3..i + 5)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let s = h * 3600 + m * 60;
            if *sign == b'-' {
                -s
            } else {
                s
            }
        }
        _ => return None,
    };
    // Every field has at most 4 digits (the year) or 2: each fits its type,
    // and jiff rejects what is out of range (month 13, February 29th of a
    // common year, hour 24, second 60).
    let at = DateTime::new(
        year as i16,
        month as i8,
        day as i8,
        hour as i8,
        minute as i8,
        second as i8,
        fraction_ns as i32,
    )
    .ok()?;
    let since_epoch = at.duration_since(jiff::civil::date(1970, 1, 1).at(0, 0, 0, 0));
    Some(since_epoch.as_nanos() - offset_s * 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_parse_across_boundaries_zones_and_precisions() {
        let ns = |s| parse_datetime(s).unwrap_or_else(|| panic!("{s} should parse"));
        assert_eq!(ns("1970-01-01 00:00:00"), 0);
        assert_eq!(ns("2023-11-16 18:17:03.9799600"), 1_700_158_623_979_960_000);
        assert_eq!(
            ns("2024-01-01 00:00:00.0000001") - ns("2023-12-31 23:59:59.9999999"),
            200
        );
        assert_eq!(
            ns("2024-03-01T00:00:00") - ns("2024-02-28 00:00:00"),
            2 * 86_400 * 1_000_000_000
        );
        assert_eq!(
            ns("2024-05-12 00:00:00.001163+00:00"),
            ns("2024-05-12 00:00:00.001163")
        );
        assert_eq!(ns("2024-05-12 02:00:00+02:00"), ns("2024-05-12 00:00:00Z"));
        assert_eq!(
            ns("2024-05-12 00:00:00.5-0130"),
            ns("2024-05-12 01:30:00.5")
        );
        // The ends of four-digit years, proleptic Gregorian.
        assert_eq!(ns("0000-03-01 00:00:00"), -719_468 * 86_400 * 1_000_000_000);
        assert_eq!(
            ns("9999-12-31 23:59:59.999999999"),
            253_402_300_799_999_999_999
        );
        for bad in [
            "2023-11-16",
            "2023-13-01 00:00:00",
            "2023-02-29 00:00:00",
            "2023-11-16 24:00:00",
            "2023-11-16 23:59:60",
            "2023-11-16 23:60:00",
            "2023-11-16 18:17:03+24:00",
            "2023-11-16 18:17:03.",
            "2023-11-16 18:17:03.1234567890",
            "2023-11-16 18:17:03 +0",
            "16/11/2023 18:17:03",
        ] {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
    }
}
