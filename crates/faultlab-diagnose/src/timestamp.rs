//! RFC 3339 timestamps (`2026-01-02T03:04:05.250Z`, `...+02:00`) to milliseconds since the Unix epoch, for the
//! optional `timestamp` field of a message. Small enough not to need a date crate.

/// Milliseconds since 1970-01-01T00:00:00Z, or `None` when `text` is not RFC 3339.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction_ms = 0.0;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        fraction_ms = format!("0.{}", &after_dot[..digits]).parse::<f64>().ok()? * 1000.0;
        rest = &after_dot[digits..];
    }
    let offset_minutes = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let value = |hi: u8, lo: u8| i64::from(hi - b'0') * 10 + i64::from(lo - b'0');
            let minutes = value(*h1, *h2) * 60 + value(*m1, *m2);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds as f64 * 1000.0 + fraction_ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse_rfc3339;

    #[test]
    fn utc_offsets_and_fractions() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_rfc3339("2026-11-29T23:16:21.696Z"), Some(1_795_994_181_696.0));
        assert_eq!(parse_rfc3339("2026-11-30T01:16:21.696+02:00"), Some(1_795_994_181_696.0));
        assert_eq!(parse_rfc3339("2000-03-01 00:00:00.5z"), Some(951_868_800_500.0));
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in ["2026-11-29", "2026-13-01T00:00:00Z", "2026-11-29T23:16:21", "yesterday", "2026-11-29T23:16:21.Z"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
