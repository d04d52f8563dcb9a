//! A second reader of request heads (fuzz targets `request_head` and
//! `secrets`): `httparse`, not the gateway's parser, and a model of how a
//! server frames a request's body from the headers it read.
#![allow(dead_code)] // Each target uses only part of the model.

/// How a server that is not the gateway frames a request's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    Length(u64),
    Chunked,
    /// Ambiguous or unknown: a careful server refuses it.
    Refused,
}

/// One request as `httparse` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub method: String,
    pub target: String,
    pub version: u8,
    /// Names as sent, values with surrounding blanks trimmed.
    pub headers: Vec<(String, Vec<u8>)>,
    /// How many bytes the head took (its blank line included).
    pub length: usize,
}

impl Read {
    pub fn values<'r>(&'r self, name: &'r str) -> impl Iterator<Item = &'r [u8]> + 'r {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The lower-case tokens of every `Connection` header.
    pub fn connection_tokens(&self) -> Vec<String> {
        self.values("connection")
            .flat_map(|value| value.split(|&b| b == b','))
            .map(|token| String::from_utf8_lossy(token).trim().to_ascii_lowercase())
            .filter(|token| !token.is_empty())
            .collect()
    }

    /// RFC 9112 §6.3 as a strict server applies it.
    pub fn body(&self) -> Body {
        let codings: Vec<&[u8]> = self.values("transfer-encoding").collect();
        let lengths: Vec<&[u8]> = self.values("content-length").collect();
        if !codings.is_empty() {
            let chunked = codings.len() == 1 && codings[0].eq_ignore_ascii_case(b"chunked");
            return if chunked && lengths.is_empty() && self.version == 1 {
                Body::Chunked
            } else {
                Body::Refused
            };
        }
        let Some(first) = lengths.first() else {
            return Body::None;
        };
        let digits = !first.is_empty() && first.iter().all(u8::is_ascii_digit);
        if !digits || lengths.iter().any(|other| other != first) {
            return Body::Refused;
        }
        match std::str::from_utf8(first).unwrap().parse::<u64>() {
            Ok(0) => Body::None,
            Ok(n) => Body::Length(n),
            Err(_) => Body::Refused,
        }
    }
}

/// `bytes` read by `httparse`: `Ok(None)` when it needs more bytes, `Err`
/// when it refuses them.
pub fn read(bytes: &[u8]) -> Result<Option<Read>, httparse::Error> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(length) = request.parse(bytes)? else {
        return Ok(None);
    };
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    Ok(Some(Read {
        method: request.method.unwrap().to_owned(),
        target: request.path.unwrap().to_owned(),
        version: request.version.unwrap(),
        headers: request
            .headers
            .iter()
            .map(|header| {
                let value = header.value;
                let start = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
                let end = value
                    .iter()
                    .rposition(|b| !blank(b))
                    .map_or(start, |e| e + 1);
                (header.name.to_owned(), value[start..end].to_vec())
            })
            .collect(),
        length,
    }))
}
