use std::net::IpAddr;

use super::*;

fn reason(text: &str) -> Option<String> {
    blocked_reason(text.parse::<IpAddr>().unwrap())
}

#[test]
fn every_internal_ipv4_class_is_blocked() {
    for (ip, why) in [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("192.0.0.8", "protocol-assignment"),
        ("198.18.0.1", "benchmarking"),
    ] {
        let r = reason(ip).unwrap_or_else(|| panic!("{ip} passed"));
        assert!(r.contains(why), "{ip}: {r}");
    }
}

#[test]
fn public_addresses_pass() {
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "100.63.255.255",
        "100.128.0.1",
        "172.15.255.255",
        "172.32.0.1",
        "169.253.0.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert_eq!(reason(ip), None, "{ip}");
    }
}

#[test]
fn every_internal_ipv6_class_is_blocked() {
    for (ip, why) in [
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fd00:ec2::254", "unique-local"),
        ("fe80::1", "link-local"),
        ("febf::1", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("64:ff9b:1::1", "local-use NAT64"),
    ] {
        let r = reason(ip).unwrap_or_else(|| panic!("{ip} passed"));
        assert!(r.contains(why), "{ip}: {r}");
    }
}

#[test]
fn ipv6_forms_embedding_an_internal_ipv4_address_are_blocked() {
    for (ip, why) in [
        (
            "::ffff:127.0.0.1",
            "loopback address (127.0.0.1) written as an IPv4-mapped",
        ),
        (
            "::ffff:7f00:1",
            "loopback address (127.0.0.1) written as an IPv4-mapped",
        ),
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:0.0.0.0", "unspecified"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("::7f00:1", "IPv4-compatible"),
        ("::10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "NAT64"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("2002:7f00:1::", "6to4"),
        ("2002:c0a8:101::1", "private"),
    ] {
        let r = reason(ip).unwrap_or_else(|| panic!("{ip} passed"));
        assert!(r.contains(why), "{ip}: {r}");
    }
}

#[test]
fn allow_lists_parse_hosts_ports_and_networks() {
    let a = Allow::parse(
        "web_fetch.allow",
        &[
            "Intranet.example".into(),
            "127.0.0.1:8080".into(),
            "10.0.0.0/8".into(),
            "[::1]".into(),
        ],
    )
    .unwrap();
    assert!(a.host_allowed("intranet.example", 443));
    assert!(!a.host_allowed("other.example", 443));
    assert!(a.addr_allowed("127.0.0.1".parse().unwrap(), 8080, "127.0.0.1"));
    assert!(!a.addr_allowed("127.0.0.1".parse().unwrap(), 8081, "127.0.0.1"));
    assert!(a.addr_allowed("10.200.3.4".parse().unwrap(), 80, "x"));
    assert!(!a.addr_allowed("11.0.0.1".parse().unwrap(), 80, "x"));
    assert!(a.addr_allowed("::1".parse().unwrap(), 80, "x"));
    for bad in ["10.0.0.0/33", "host:notaport", "a b", "::1/200"] {
        let e = Allow::parse("web_fetch.allow", &[bad.into()]).unwrap_err();
        assert!(e.contains("web_fetch.allow") && e.contains(bad), "{e}");
    }
}

#[tokio::test]
async fn url_forms_of_loopback_are_blocked_before_any_connection() {
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.0.0.1/",
        "http://0x7f000001/",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://0.0.0.0/",
        "http://localhost/",
        "http://169.254.169.254/latest/meta-data/",
    ] {
        let u = Url::parse(url).unwrap();
        let e = check(&u, &Allow::default(), "web_fetch.allow").await.unwrap_err();
        assert!(matches!(e, GuardError::Blocked { .. }), "{url}: {e}");
        assert!(e.to_string().contains("web_fetch.allow"), "{e}");
    }
    let e = check(&Url::parse("file:///etc/passwd").unwrap(), &Allow::default(), "k")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("only http and https"), "{e}");
}

#[tokio::test]
async fn allowed_entries_open_only_their_host() {
    let allow = Allow::parse("k", &["127.0.0.1:9".into()]).unwrap();
    let ok = check(&Url::parse("http://127.0.0.1:9/x").unwrap(), &allow, "k")
        .await
        .unwrap();
    assert_eq!(ok.addrs, vec!["127.0.0.1:9".parse().unwrap()]);
    assert!(
        check(&Url::parse("http://127.0.0.1:10/").unwrap(), &allow, "k")
            .await
            .is_err()
    );
    assert!(
        check(&Url::parse("http://[::1]:9/").unwrap(), &allow, "k")
            .await
            .is_err()
    );
}
