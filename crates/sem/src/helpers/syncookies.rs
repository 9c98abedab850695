//! The meaning of the SYN cookie helpers that work on raw headers, as SYN proxies call them:
//! `bpf_tcp_raw_gen_syncookie_ipv4/6(iph, th, th_len)` and
//! `bpf_tcp_raw_check_syncookie_ipv4/6(iph, th)` (net/core/filter.c).
//!
//! A cookie is a hash of the addresses, ports and sequence number under a secret the kernel
//! draws at boot and the current minute, so no machine can compute it: the cookie, the MSS it
//! encodes and a check's verdict are sources ([`Source::SynCookie`], [`Source::SynCookieMss`],
//! [`Source::SynCookieValid`]). What the helpers check of their arguments is exact.

use linerate_bpf::facts::errno::{EACCES, EINVAL};

use super::{from_bytes, signed, HelperMachine, Source};
use crate::domain::{BinOp, CmpOp, Domain};
use crate::exec::{Ops, Val};

/// `sizeof(struct iphdr)` and `sizeof(struct ipv6hdr)`: the bytes the helpers read at `iph`.
const IPV4_HEADER: u64 = 20;
const IPV6_HEADER: u64 = 40;
/// `sizeof(struct tcphdr)`.
const TCP_HEADER: u64 = 20;
/// Offset of the byte holding `doff` (its high nibble) in the TCP header.
const DOFF_BYTE: usize = 12;

/// The MSS values a cookie can encode (`msstab` in net/ipv4/syncookies.c and
/// net/ipv6/syncookies.c), by index.
const MSS_IPV4: [u64; 4] = [536, 1300, 1440, 1460];
const MSS_IPV6: [u64; 4] = [1280 - 60, 1480 - 60, 1500 - 60, 9000 - 60];

/// `bpf_tcp_raw_gen_syncookie_ipv4/6(iph, th, th_len)`: `-EINVAL` unless `th_len` is at least a
/// TCP header and equals `th->doff * 4`; otherwise the cookie in the low 32 bits and the MSS it
/// encodes in the high ones.
pub(super) fn generate<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    ipv6: bool,
    iph: &Val<M>,
    th: &Val<M>,
    th_len: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let th_len = m.zext(th_len, 32);
    let header = m.domain().constant(TCP_HEADER);
    let short = m.domain().compare(CmpOp::Ult, &th_len, &header);
    let long_enough = m.domain().not(&short);
    let einval = signed(m, -EINVAL);
    // The verifier makes `th_len` bytes at `th` readable, no more: a shorter header is refused
    // before the helper reads it.
    if !m.decide(pc, &long_enough)? {
        return Ok(einval);
    }
    m.read_bytes(pc, iph, if ipv6 { IPV6_HEADER } else { IPV4_HEADER })?;
    let tcp = m.read_bytes(pc, th, TCP_HEADER)?;
    let doff_byte = from_bytes(m, &tcp[DOFF_BYTE..=DOFF_BYTE]);
    let four = m.domain().constant(4);
    let doff = m.domain().binary(BinOp::LShr, &doff_byte, &four);
    let two = m.domain().constant(2);
    let header_len = m.domain().binary(BinOp::Shl, &doff, &two);
    let matches = m.domain().compare(CmpOp::Eq, &header_len, &th_len);
    let cookie = m.source(pc, Source::SynCookie)?;
    let index = m.source(pc, Source::SynCookieMss)?;
    let table = if ipv6 { MSS_IPV6 } else { MSS_IPV4 };
    let mut mss = m.domain().constant(table[0]);
    for (i, value) in table.iter().enumerate().skip(1) {
        let at = m.domain().constant(i as u64);
        let here = m.domain().compare(CmpOp::Eq, &index, &at);
        let value = m.domain().constant(*value);
        mss = m.domain().ite(&here, &value, &mss);
    }
    let thirty_two = m.domain().constant(32);
    let high = m.domain().binary(BinOp::Shl, &mss, &thirty_two);
    let generated = m.domain().binary(BinOp::Or, &cookie, &high);
    Ok(m.domain().ite(&matches, &generated, &einval))
}

/// `bpf_tcp_raw_check_syncookie_ipv4/6(iph, th)`: 0 where the ACK's sequence number carries a
/// cookie the kernel issued, `-EACCES` otherwise.
pub(super) fn check<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    ipv6: bool,
    iph: &Val<M>,
    th: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    m.read_bytes(pc, iph, if ipv6 { IPV6_HEADER } else { IPV4_HEADER })?;
    m.read_bytes(pc, th, TCP_HEADER)?;
    let valid = m.source(pc, Source::SynCookieValid)?;
    let zero = m.domain().constant(0);
    let rejected = m.domain().compare(CmpOp::Eq, &valid, &zero);
    let eacces = signed(m, -EACCES);
    Ok(m.domain().ite(&rejected, &eacces, &zero))
}
