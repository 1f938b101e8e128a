//! The SSRF guard: a webhook must not become a way to make the service
//! send requests into its own network (a database, a cloud's metadata
//! address). Unless the setting `webhook_allow_private` allows internal
//! receivers, an endpoint whose host resolves to a loopback, private or
//! link-local address is refused when it is registered ([`check`]), and
//! every delivery checks again as it connects ([`Resolver`],
//! [`check_literal`]): DNS can change after registration, and the
//! addresses checked must be the ones connected to.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How long a host may take to resolve when an endpoint is registered.
const RESOLVE_WITHIN: Duration = Duration::from_secs(5);

/// Checks that a URL's host resolves and, unless `allow_private`, to
/// public addresses only. Why not, when it does not.
pub async fn check(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    let host = url.host_str().ok_or("the URL names no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let host = bare(host);
    let found = tokio::time::timeout(RESOLVE_WITHIN, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("{host} did not resolve in time"))?
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect::<Vec<_>>();
    if found.is_empty() {
        return Err(format!("{host} has no address"));
    }
    if !allow_private && let Some(private) = first_private(&found) {
        return Err(format!(
            "{host} resolves to {}, a loopback, private or link-local address; \
             the setting webhook_allow_private allows internal receivers",
            private.ip()
        ));
    }
    Ok(())
}

/// Refuses a URL whose host is an address written out (no name to
/// resolve, so [`Resolver`] never sees it) that is not public, unless
/// `allow_private`.
pub fn check_literal(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    let literal = url.host_str().and_then(|h| bare(h).parse::<IpAddr>().ok());
    match literal {
        Some(ip) if !allow_private && !public(ip) => {
            Err(format!("{ip} is a loopback, private or link-local address"))
        }
        _ => Ok(()),
    }
}

/// The delivery client's resolver: the host's addresses, every one of
/// which must be public unless private ones are allowed. The addresses it
/// checks are the ones connected to, so a name cannot be pointed at a
/// private address between the check and the connection.
pub struct Resolver {
    pub allow_private: bool,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private && let Some(a) = first_private(&found) {
                return Err(format!("{host} resolves to {}, a private address", a.ip()).into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A host without the brackets a URL puts around an IPv6 address.
fn bare(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The first of `found` that is not on the public internet.
fn first_private(found: &[SocketAddr]) -> Option<&SocketAddr> {
    found.iter().find(|a| !public(a.ip()))
}

/// Whether an address is on the public internet.
pub fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                // 100.64.0.0/10, carrier-grade NAT.
                || (o[0] == 100 && (o[1] & 0xc0) == 64))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7, unique local.
                || (first & 0xfe00) == 0xfc00
                // fe80::/10, link-local.
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_public_addresses_are_told_apart() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn an_address_written_in_the_url_is_checked_without_resolving() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        assert!(check_literal(&url("http://127.0.0.1:8080/hook"), false).is_err());
        assert!(check_literal(&url("http://[::1]/hook"), false).is_err());
        assert!(check_literal(&url("http://127.0.0.1/hook"), true).is_ok());
        assert!(check_literal(&url("https://8.8.8.8/hook"), false).is_ok());
        // A name is the resolver's to check.
        assert!(check_literal(&url("http://localhost/hook"), false).is_ok());
    }
}
