//! The SSRF guard: a webhook must not become a way to make the service
//! send requests into its own network (a database, a cloud's metadata
//! address). Unless the setting `webhook_allow_private` allows internal
//! receivers, an endpoint whose host resolves to an address that is not
//! on the public internet (see [`public`]) is refused when it is
//! registered ([`check`]), and
//! every delivery checks again as it connects ([`Resolver`],
//! [`check_literal`]): DNS can change after registration, and the
//! addresses checked must be the ones connected to.

use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
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
            "{host} resolves to {}, an address of the IANA special-purpose registries \
             (loopback, private, link-local, reserved, or IPv4 inside IPv6), not a public one; \
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
        Some(ip) if !allow_private && !public(ip) => Err(format!(
            "{ip} is an address of the IANA special-purpose registries, not a public one"
        )),
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
                return Err(format!("{host} resolves to {}, not a public address", a.ip()).into());
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

/// Blocks of the IANA IPv4 Special-Purpose Address Registry (all of
/// them, globally reachable or not: none is a place a webhook receiver
/// lives), with multicast (224.0.0.0/4) beside them.
const V4_SPECIAL: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.31.196.0/24",
    "192.52.193.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "192.175.48.0/24",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
];

/// Blocks of the IANA IPv6 Special-Purpose Address Registry inside the
/// global unicast space 2000::/3 (everything outside 2000::/3 is refused
/// whole: loopback, IPv4-compatible, NAT64 `64:ff9b::/96` and
/// `64:ff9b:1::/48`, discard-only, unique local, link-local, the retired
/// site-local `fec0::/10`, multicast). Teredo and 6to4 (`2001::/32`,
/// `2002::/16`) carry an IPv4 address inside and are refused with the rest.
const V6_SPECIAL: &[&str] = &[
    "2001::/23",
    "2001:db8::/32",
    "2002::/16",
    "2620:4f:8000::/48",
    "3fff::/20",
    "5f00::/16",
];

/// Whether an address is on the public internet: outside every block of
/// the IANA special-purpose registries, for IPv4 and IPv6 alike. An IPv4
/// address mapped into IPv6 (`::ffff:a.b.c.d`) is judged as the IPv4
/// address it is.
///
/// The standard library's `is_global` is unstable, and the crates that
/// copy it (`ip_rfc`) predate the registry's newer blocks; the blocks are
/// listed here from the registries and matched with `ipnet`.
pub fn public(ip: IpAddr) -> bool {
    static V4: LazyLock<Vec<ipnet::Ipv4Net>> = LazyLock::new(|| blocks(V4_SPECIAL));
    static V6: LazyLock<Vec<ipnet::Ipv6Net>> = LazyLock::new(|| blocks(V6_SPECIAL));
    match ip {
        IpAddr::V4(v4) => !V4.iter().any(|n| n.contains(&v4)),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            let global_unicast = (v6.segments()[0] & 0xe000) == 0x2000;
            global_unicast && !V6.iter().any(|n| n.contains(&v6))
        }
    }
}

/// A table of blocks, parsed once. A block that does not parse is a
/// mistake in the table, not something to skip (the unit tests parse
/// both tables).
fn blocks<N: std::str::FromStr>(table: &[&str]) -> Vec<N> {
    (table.iter())
        .map(|b| b.parse().unwrap_or_else(|_| panic!("{b} is not a block")))
        .collect()
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
            // Special-purpose blocks, IPv4 inside IPv6 among them.
            "::7f00:1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::",
            "2001:0:7f00:1::",
            "fec0::1",
            "198.18.0.1",
            "198.19.255.254",
            "240.0.0.1",
            "192.0.0.9",
            "192.0.2.10",
            "224.0.0.251",
            "100::1",
            "2001:db8::1",
            "3fff::1",
            "ff02::1",
        ] {
            assert!(!public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "93.184.216.34",
            "2a00:1450:4001::1",
        ] {
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
