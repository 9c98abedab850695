//! FIB tables in JSON, the routes `bpf_fib_lookup` consults in the interpreter:
//! `[{"prefix": "10.0.0.0/8", "ifindex": 2, "smac": "hex", "dmac": "hex"}]`.

use std::net::IpAddr;
use std::path::Path;

use linerate_vm::FibRoute;
use serde::Deserialize;

use crate::error::{read_text, Error, FileKind, JsonError};
use crate::hex::{parse_hex, HexError};

/// A route as the file spells it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FibJson {
    prefix: String,
    ifindex: u32,
    smac: String,
    dmac: String,
}

/// A FIB text that is not a list of routes, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    #[error(transparent)]
    Json(#[from] JsonError),
    /// Route `route` (counted from 0) is not a route.
    #[error("route {route}: {error}")]
    Route { route: usize, error: RouteError },
}

/// Why one route is not a route.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("prefix `{0}` lacks /length")]
    NoLength(String),
    #[error("`{0}` is not an IP address")]
    Address(String),
    #[error("`{0}` is not a prefix length")]
    Length(String),
    #[error("prefix length {0} too long")]
    TooLong(u8),
    #[error(transparent)]
    Hex(#[from] HexError),
    #[error("MAC `{0}` is not 6 bytes")]
    Mac(String),
}

/// Reads routes from JSON text.
pub fn parse_fib(text: &str) -> Result<Vec<FibRoute>, FibError> {
    let routes: Vec<FibJson> = serde_json::from_str(text).map_err(JsonError::from)?;
    routes
        .iter()
        .enumerate()
        .map(|(route, r)| fib_route(r).map_err(|error| FibError::Route { route, error }))
        .collect()
}

fn fib_route(r: &FibJson) -> Result<FibRoute, RouteError> {
    let (addr, len) = r
        .prefix
        .split_once('/')
        .ok_or_else(|| RouteError::NoLength(r.prefix.clone()))?;
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| RouteError::Address(addr.to_string()))?;
    let prefix_len: u8 = len
        .parse()
        .map_err(|_| RouteError::Length(len.to_string()))?;
    let mut prefix = [0u8; 16];
    let ipv6 = match ip {
        IpAddr::V4(v4) => {
            prefix[..4].copy_from_slice(&v4.octets());
            false
        }
        IpAddr::V6(v6) => {
            prefix.copy_from_slice(&v6.octets());
            true
        }
    };
    if prefix_len > if ipv6 { 128 } else { 32 } {
        return Err(RouteError::TooLong(prefix_len));
    }
    let mac = |s: &str| -> Result<[u8; 6], RouteError> {
        parse_hex(s)?
            .try_into()
            .map_err(|_| RouteError::Mac(s.to_string()))
    };
    Ok(FibRoute {
        ipv6,
        prefix,
        prefix_len,
        ifindex: r.ifindex,
        smac: mac(&r.smac)?,
        dmac: mac(&r.dmac)?,
    })
}

/// Routes as `run --fib` reads them (the inverse of [`parse_fib`]), MAC addresses in plain hex.
pub fn encode_fib(routes: &[FibRoute]) -> serde_json::Value {
    let routes: Vec<serde_json::Value> = routes
        .iter()
        .map(|r| {
            let address = if r.ipv6 {
                IpAddr::from(r.prefix)
            } else {
                IpAddr::from([r.prefix[0], r.prefix[1], r.prefix[2], r.prefix[3]])
            };
            serde_json::json!({
                "prefix": format!("{address}/{}", r.prefix_len),
                "ifindex": r.ifindex,
                "smac": crate::hex::to_hex(&r.smac),
                "dmac": crate::hex::to_hex(&r.dmac),
            })
        })
        .collect();
    serde_json::Value::Array(routes)
}

/// Reads a FIB file.
pub fn read_fib_file(path: &Path) -> Result<Vec<FibRoute>, Error> {
    let text = read_text(path, FileKind::Fib)?;
    parse_fib(&text).map_err(|error| Error::Fib {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_routes_and_names_the_bad_one() {
        let routes = parse_fib(
            r#"[{"prefix": "10.0.0.0/8", "ifindex": 2, "smac": "020000000001", "dmac": "02:00:00:00:00:02"},
                {"prefix": "fd00::/16", "ifindex": 3, "smac": "020000000001", "dmac": "020000000002"}]"#,
        )
        .unwrap();
        assert_eq!(routes.len(), 2);
        assert_eq!((routes[0].ipv6, routes[0].prefix_len), (false, 8));
        assert_eq!(&routes[0].prefix[..4], &[10, 0, 0, 0]);
        assert_eq!(routes[0].dmac, [2, 0, 0, 0, 0, 2]);
        assert!(routes[1].ipv6);
        let again = parse_fib(&encode_fib(&routes).to_string()).unwrap();
        assert_eq!(again, routes, "encode_fib writes what parse_fib reads");
        let err =
            parse_fib(r#"[{"prefix": "10.0.0.0/33", "ifindex": 2, "smac": "02", "dmac": "02"}]"#)
                .unwrap_err();
        assert_eq!(err.to_string(), "route 0: prefix length 33 too long");
        let path = Path::new("routes.json");
        let file_error = |error| Error::Fib {
            path: path.to_path_buf(),
            error,
        };
        assert_eq!(
            file_error(err).to_string(),
            "FIB file routes.json route 0: prefix length 33 too long"
        );
        let err = parse_fib("[{\"prefix\": 1}]").unwrap_err();
        assert!(file_error(err)
            .to_string()
            .starts_with("FIB file routes.json: invalid JSON at line 1 column 13: invalid type"),);
    }
}
