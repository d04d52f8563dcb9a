//! An independent model of how an upstream server may read a request's
//! path (fuzz targets `http_rules` and `secrets`; it calls nothing of the
//! gateway's): the target as sent or percent-decoded once, twice or three
//! times, its query and fragment split off before or after decoding, `\`
//! read as `/`, `;` parameters kept or stripped from each segment, then dot
//! segments resolved (RFC 3986 §5.2.4).

/// `bytes` with every `%XX` (two hex digits) decoded once.
pub fn decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(high * 16 + low);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// Everything before the first `?` or `#`.
fn before_query(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(bytes.len());
    &bytes[..end]
}

/// Each segment without its `;` parameters.
fn strip_parameters(path: &[u8]) -> Vec<u8> {
    let segments: Vec<&[u8]> = path
        .split(|&b| b == b'/')
        .map(|segment| segment.split(|&b| b == b';').next().unwrap_or_default())
        .collect();
    segments.join(&b'/')
}

/// Dot segments resolved: `.` dropped, `..` drops the segment before it.
fn resolve(path: &[u8]) -> Vec<u8> {
    let segments: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let last = segments.len() - 1;
    let mut out: Vec<&[u8]> = Vec::new();
    for (i, segment) in segments.iter().enumerate().skip(1) {
        match *segment {
            b"." | b".." => {
                if *segment == b".." {
                    out.pop();
                }
                if i == last {
                    out.push(b"");
                }
            }
            other => out.push(other),
        }
    }
    let mut resolved = vec![b'/'];
    resolved.extend_from_slice(&out.join(&b'/'));
    resolved
}

/// Every way the model's servers read `target` (an origin-form request
/// target), each as `(how, path)`.
pub fn readings(target: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for decodings in 0..=3 {
        for split_first in [true, false] {
            for strip in [false, true] {
                let mut text = target.to_vec();
                if split_first {
                    text = before_query(&text).to_vec();
                }
                for _ in 0..decodings {
                    text = decode(&text);
                }
                if !split_first {
                    text = before_query(&text).to_vec();
                }
                for byte in text.iter_mut() {
                    if *byte == b'\\' {
                        *byte = b'/';
                    }
                }
                if strip {
                    text = strip_parameters(&text);
                }
                if !text.starts_with(b"/") {
                    text.insert(0, b'/');
                }
                let how = format!(
                    "decoded {decodings}x, split {}, parameters {}",
                    if split_first { "first" } else { "after" },
                    if strip { "stripped" } else { "kept" }
                );
                out.push((how, resolve(&text)));
            }
        }
    }
    out
}

/// Whether every reading of `target` lies under the same reading of
/// `prefix` (a rule's path prefix); `Err` names a reading that leaves it.
pub fn under(target: &[u8], prefix: &[u8]) -> Result<(), String> {
    let prefixes = readings(prefix);
    for ((how, path), (_, prefix)) in readings(target).into_iter().zip(prefixes) {
        if !path.starts_with(&prefix) {
            return Err(format!(
                "{how}: {:?} is not under {:?}",
                String::from_utf8_lossy(&path),
                String::from_utf8_lossy(&prefix)
            ));
        }
    }
    Ok(())
}
