//! The kernel helpers the interpreter provides to XDP programs.
//!
//! Each helper reads its arguments from r1–r5 and leaves its result in r0, with the kernel's return
//! conventions (negative errno on failure, XDP actions from the redirect helpers). Anything not
//! listed in [`call`] is refused with an "unsupported helper" error naming the helper and the
//! instruction, never silently ignored.

use linerate_bpf::helpers::helper_name;
use linerate_bpf::MapType;
use linerate_sem::HelperOutcome;

use crate::error::VmError;
use crate::machine::{Execution, Redirect, MAX_TAIL_CALLS};
use crate::maps::EINVAL;

/// `XDP_ABORTED`, `XDP_REDIRECT`.
const XDP_ABORTED: u64 = 0;
const XDP_REDIRECT: u64 = 4;
/// `EFAULT`.
const EFAULT: i64 = 14;
/// Size of the kernel's csum_diff scratch buffer (`MAX_BPF_STACK`).
const CSUM_DIFF_MAX: u64 = 512;
/// `struct bpf_fib_lookup` size and `BPF_FIB_LKUP_RET_NOT_FWDED`.
const FIB_PARAMS_SIZE: usize = 64;
const FIB_NOT_FORWARDED: u64 = 4;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// A route `bpf_fib_lookup` returns: destinations within `prefix/prefix_len` leave through
/// `ifindex` with the given MAC addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FibRoute {
    /// IPv6 route (otherwise IPv4, in the first 4 bytes of `prefix`).
    pub ipv6: bool,
    pub prefix: [u8; 16],
    pub prefix_len: u8,
    pub ifindex: u32,
    pub smac: [u8; 6],
    pub dmac: [u8; 6],
}

/// Helpers the interpreter implements, by number.
pub const SUPPORTED: &[u32] = &[
    1, 2, 3, 5, 6, 7, 8, 12, 23, 28, 44, 51, 54, 65, 69, 125, 188, 189, 190,
];

/// Calls helper `id` for the instruction at `pc`.
pub(crate) fn call(
    x: &mut Execution<'_>,
    pc: usize,
    id: u32,
) -> Result<HelperOutcome, Box<VmError>> {
    let [_, r1, r2, r3, r4, r5, ..] = x.regs;
    let ret: u64 = match id {
        1 => {
            let map = x.map_of_handle(pc, id, r1)?;
            let key = x.read_bytes(pc, r2, x.vm.maps[map].def.key_size as usize)?;
            match x.vm.maps[map].lookup(&key) {
                Some(slot) => x.value_pointer(map, slot),
                None => 0,
            }
        }
        2 => {
            let map = x.map_of_handle(pc, id, r1)?;
            let def = &x.vm.maps[map].def;
            let (key_size, value_size) = (def.key_size as usize, def.value_size as usize);
            let key = x.read_bytes(pc, r2, key_size)?;
            let value = x.read_bytes(pc, r3, value_size)?;
            x.vm.maps[map].update(&key, &value, r4) as u64
        }
        3 => {
            let map = x.map_of_handle(pc, id, r1)?;
            let key = x.read_bytes(pc, r2, x.vm.maps[map].def.key_size as usize)?;
            x.vm.maps[map].delete(&key) as u64
        }
        5 | 125 => x.vm.next_ktime(),
        6 => trace_printk(x, pc, r1, r2, [r3, r4, r5])?,
        7 => x.vm.next_prandom() as u64,
        8 => 0,
        12 => {
            let map = x.map_of_handle(pc, id, r2)?;
            if x.vm.maps[map].def.map_type != MapType::PROG_ARRAY {
                return Err(Box::new(bad_argument(
                    x,
                    pc,
                    id,
                    "map is not a program array",
                )));
            }
            if x.tail_calls < MAX_TAIL_CALLS {
                let slot = x.vm.maps[map].lookup(&(r3 as u32).to_le_bytes());
                if let Some(slot) = slot {
                    let target = read_u32(x.vm.maps[map].value(slot)) as usize;
                    if target < x.vm.object().programs.len() {
                        x.tail_calls += 1;
                        x.program = target;
                        return Ok(HelperOutcome::TailCall);
                    }
                }
            }
            // A failed tail call falls through to the next instruction.
            0
        }
        23 => {
            if r2 != 0 {
                XDP_ABORTED
            } else {
                x.redirect = Some(Redirect::Ifindex(r1 as u32));
                XDP_REDIRECT
            }
        }
        28 => csum_diff(x, pc, r1, r2, r3, r4, r5)?,
        44 => x.scratch.packet.adjust_head(r2 as i32 as i64) as u64,
        51 => {
            let map = x.map_of_handle(pc, id, r1)?;
            redirect_map(x, map, r2 as u32, r3)
        }
        54 => x.scratch.packet.adjust_meta(r2 as i32 as i64) as u64,
        65 => x.scratch.packet.adjust_tail(r2 as i32 as i64) as u64,
        69 => fib_lookup(x, pc, r2, r3)?,
        188 => (x.scratch.packet.data_end - x.scratch.packet.data) as u64,
        189 | 190 => {
            let (offset, len) = (r2 as u32 as usize, r4 as u32 as usize);
            let start = x.scratch.packet.data + offset;
            if len == 0 || start + len > x.scratch.packet.data_end {
                (-EFAULT) as u64
            } else if id == 189 {
                let bytes = x.scratch.packet.buf[start..start + len].to_vec();
                x.write_bytes(pc, r3, &bytes)?;
                0
            } else {
                let bytes = x.read_bytes(pc, r3, len)?;
                x.scratch.packet.buf[start..start + len].copy_from_slice(&bytes);
                0
            }
        }
        _ => {
            return Err(Box::new(VmError::UnsupportedHelper {
                program: x.program_name(),
                pc,
                id,
                name: helper_name(id),
            }))
        }
    };
    x.regs[0] = ret;
    Ok(HelperOutcome::Return)
}

fn bad_argument(x: &Execution<'_>, pc: usize, helper: u32, reason: &str) -> VmError {
    VmError::BadHelperArgument {
        program: x.program_name(),
        pc,
        helper,
        reason: reason.to_string(),
    }
}

fn read_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    let n = bytes.len().min(4);
    word[..n].copy_from_slice(&bytes[..n]);
    u32::from_le_bytes(word)
}

/// `bpf_redirect_map`: `XDP_REDIRECT` if the entry exists, else the action in the low flag bits.
fn redirect_map(x: &mut Execution<'_>, map: usize, key: u32, flags: u64) -> u64 {
    const ACTION_MASK: u64 = 3;
    const BROADCAST: u64 = 1 << 3;
    const EXCLUDE_INGRESS: u64 = 1 << 4;
    let map_type = x.vm.maps[map].def.map_type;
    let flag_mask = if matches!(map_type, MapType::DEVMAP | MapType::DEVMAP_HASH) {
        BROADCAST | EXCLUDE_INGRESS
    } else {
        0
    };
    if flags & !(ACTION_MASK | flag_mask) != 0 {
        return XDP_ABORTED;
    }
    if flags & BROADCAST != 0 || x.vm.maps[map].lookup(&key.to_le_bytes()).is_some() {
        x.redirect = Some(Redirect::Map { map, key });
        XDP_REDIRECT
    } else {
        flags & ACTION_MASK
    }
}

/// `bpf_csum_diff`: the 32-bit one's-complement sum of `seed`, the complemented `from` words and
/// the `to` words, folded to 32 bits as the kernel's `csum_partial` does.
fn csum_diff(
    x: &mut Execution<'_>,
    pc: usize,
    from: u64,
    from_size: u64,
    to: u64,
    to_size: u64,
    seed: u64,
) -> Result<u64, Box<VmError>> {
    let from_size = from_size as u32 as u64;
    let to_size = to_size as u32 as u64;
    if (from_size | to_size) & 3 != 0 || from_size + to_size > CSUM_DIFF_MAX {
        return Ok((-EINVAL) as u64);
    }
    let from_bytes = if from_size > 0 {
        x.read_bytes(pc, from, from_size as usize)?
    } else {
        Vec::new()
    };
    let to_bytes = if to_size > 0 {
        x.read_bytes(pc, to, to_size as usize)?
    } else {
        Vec::new()
    };
    let mut sum = seed as u32 as u64;
    for word in from_bytes.chunks_exact(4) {
        sum += !read_u32(word) as u64;
    }
    for word in to_bytes.chunks_exact(4) {
        sum += read_u32(word) as u64;
    }
    Ok(fold_to_32(sum))
}

/// Folds a 64-bit sum of 32-bit words into a 32-bit one's-complement sum.
fn fold_to_32(mut sum: u64) -> u64 {
    while sum >> 32 != 0 {
        sum = (sum & 0xffff_ffff) + (sum >> 32);
    }
    sum
}

/// `bpf_fib_lookup` against [`crate::VmOptions::fib`]: longest-prefix match on the destination.
fn fib_lookup(
    x: &mut Execution<'_>,
    pc: usize,
    params: u64,
    len: u64,
) -> Result<u64, Box<VmError>> {
    if (len as usize) < FIB_PARAMS_SIZE {
        return Ok((-EINVAL) as u64);
    }
    let mut p = x.read_bytes(pc, params, FIB_PARAMS_SIZE)?;
    let (ipv6, addr_len) = match p[0] {
        AF_INET => (false, 4),
        AF_INET6 => (true, 16),
        _ => return Ok((-97i64) as u64), // EAFNOSUPPORT
    };
    let dst = &p[32..32 + addr_len];
    let best =
        x.vm.options
            .fib
            .iter()
            .filter(|r| r.ipv6 == ipv6 && prefix_matches(&r.prefix[..addr_len], dst, r.prefix_len))
            .max_by_key(|r| r.prefix_len)
            .cloned();
    let Some(route) = best else {
        return Ok(FIB_NOT_FORWARDED);
    };
    p[8..12].copy_from_slice(&route.ifindex.to_le_bytes());
    p[52..58].copy_from_slice(&route.smac);
    p[58..64].copy_from_slice(&route.dmac);
    x.write_bytes(pc, params, &p)?;
    Ok(0)
}

fn prefix_matches(prefix: &[u8], addr: &[u8], bits: u8) -> bool {
    (0..bits as usize).all(|bit| {
        let mask = 0x80u8 >> (bit % 8);
        match (prefix.get(bit / 8), addr.get(bit / 8)) {
            (Some(a), Some(b)) => a & mask == b & mask,
            _ => false,
        }
    })
}

/// `bpf_trace_printk`: formats with up to three arguments and records the line; returns the
/// number of bytes written as the kernel does.
fn trace_printk(
    x: &mut Execution<'_>,
    pc: usize,
    fmt: u64,
    fmt_size: u64,
    args: [u64; 3],
) -> Result<u64, Box<VmError>> {
    let fmt_size = fmt_size as u32 as usize;
    let bytes = x.read_bytes(pc, fmt, fmt_size)?;
    let Some(end) = bytes.iter().position(|b| *b == 0) else {
        return Ok((-EINVAL) as u64);
    };
    let fmt = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let text = format_printk(&fmt, &args);
    let len = text.len() as u64;
    x.trace.push(text.trim_end_matches('\n').to_string());
    Ok(len)
}

/// A small printf for the conversions BPF programs use: `%d %i %u %x %X %c %p %%` with `l`/`ll`
/// and `h` modifiers.
fn format_printk(fmt: &str, args: &[u64; 3]) -> String {
    let mut out = String::new();
    let mut next_arg = args.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut longs = 0;
        while let Some(&m) = chars.peek() {
            match m {
                'l' => longs += 1,
                'h' | 'z' => {}
                _ => break,
            }
            chars.next();
        }
        let Some(conv) = chars.next() else { break };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = next_arg.next().copied().unwrap_or(0);
        let v = if longs == 0 { v as u32 as u64 } else { v };
        match conv {
            'd' | 'i' if longs == 0 => out.push_str(&(v as u32 as i32).to_string()),
            'd' | 'i' => out.push_str(&(v as i64).to_string()),
            'u' => out.push_str(&v.to_string()),
            'x' => out.push_str(&format!("{v:x}")),
            'X' => out.push_str(&format!("{v:X}")),
            'c' => out.push(char::from(v as u8)),
            'p' => out.push_str(&format!("{v:#x}")),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printk_formats_common_conversions() {
        assert_eq!(
            format_printk("a=%d b=%llu c=%x %%\n", &[(-5i64) as u64, 7, 255]),
            "a=-5 b=7 c=ff %\n"
        );
    }

    #[test]
    fn csum_fold_carries_around() {
        assert_eq!(fold_to_32(0xffff_ffff + 2), 2);
        assert_eq!(fold_to_32(0x1_0000_0000), 1);
    }
}
