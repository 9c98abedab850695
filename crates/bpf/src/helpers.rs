//! Names of the kernel's BPF helper functions, indexed by helper number.
//!
//! Generated from the `__BPF_FUNC_MAPPER` list of the Linux UAPI header `linux/bpf.h`; number
//! `i` is the helper called by `call i`.

/// `HELPER_NAMES[id]` is the name of helper `id` (without the `bpf_` prefix).
pub const HELPER_NAMES: &[&str] = &[
    "unspec",
    "map_lookup_elem",
    "map_update_elem",
    "map_delete_elem",
    "probe_read",
    "ktime_get_ns",
    "trace_printk",
    "get_prandom_u32",
    "get_smp_processor_id",
    "skb_store_bytes",
    "l3_csum_replace",
    "l4_csum_replace",
    "tail_call",
    "clone_redirect",
    "get_current_pid_tgid",
    "get_current_uid_gid",
    "get_current_comm",
    "get_cgroup_classid",
    "skb_vlan_push",
    "skb_vlan_pop",
    "skb_get_tunnel_key",
    "skb_set_tunnel_key",
    "perf_event_read",
    "redirect",
    "get_route_realm",
    "perf_event_output",
    "skb_load_bytes",
    "get_stackid",
    "csum_diff",
    "skb_get_tunnel_opt",
    "skb_set_tunnel_opt",
    "skb_change_proto",
    "skb_change_type",
    "skb_under_cgroup",
    "get_hash_recalc",
    "get_current_task",
    "probe_write_user",
    "current_task_under_cgroup",
    "skb_change_tail",
    "skb_pull_data",
    "csum_update",
    "set_hash_invalid",
    "get_numa_node_id",
    "skb_change_head",
    "xdp_adjust_head",
    "probe_read_str",
    "get_socket_cookie",
    "get_socket_uid",
    "set_hash",
    "setsockopt",
    "skb_adjust_room",
    "redirect_map",
    "sk_redirect_map",
    "sock_map_update",
    "xdp_adjust_meta",
    "perf_event_read_value",
    "perf_prog_read_value",
    "getsockopt",
    "override_return",
    "sock_ops_cb_flags_set",
    "msg_redirect_map",
    "msg_apply_bytes",
    "msg_cork_bytes",
    "msg_pull_data",
    "bind",
    "xdp_adjust_tail",
    "skb_get_xfrm_state",
    "get_stack",
    "skb_load_bytes_relative",
    "fib_lookup",
    "sock_hash_update",
    "msg_redirect_hash",
    "sk_redirect_hash",
    "lwt_push_encap",
    "lwt_seg6_store_bytes",
    "lwt_seg6_adjust_srh",
    "lwt_seg6_action",
    "rc_repeat",
    "rc_keydown",
    "skb_cgroup_id",
    "get_current_cgroup_id",
    "get_local_storage",
    "sk_select_reuseport",
    "skb_ancestor_cgroup_id",
    "sk_lookup_tcp",
    "sk_lookup_udp",
    "sk_release",
    "map_push_elem",
    "map_pop_elem",
    "map_peek_elem",
    "msg_push_data",
    "msg_pop_data",
    "rc_pointer_rel",
    "spin_lock",
    "spin_unlock",
    "sk_fullsock",
    "tcp_sock",
    "skb_ecn_set_ce",
    "get_listener_sock",
    "skc_lookup_tcp",
    "tcp_check_syncookie",
    "sysctl_get_name",
    "sysctl_get_current_value",
    "sysctl_get_new_value",
    "sysctl_set_new_value",
    "strtol",
    "strtoul",
    "sk_storage_get",
    "sk_storage_delete",
    "send_signal",
    "tcp_gen_syncookie",
    "skb_output",
    "probe_read_user",
    "probe_read_kernel",
    "probe_read_user_str",
    "probe_read_kernel_str",
    "tcp_send_ack",
    "send_signal_thread",
    "jiffies64",
    "read_branch_records",
    "get_ns_current_pid_tgid",
    "xdp_output",
    "get_netns_cookie",
    "get_current_ancestor_cgroup_id",
    "sk_assign",
    "ktime_get_boot_ns",
    "seq_printf",
    "seq_write",
    "sk_cgroup_id",
    "sk_ancestor_cgroup_id",
    "ringbuf_output",
    "ringbuf_reserve",
    "ringbuf_submit",
    "ringbuf_discard",
    "ringbuf_query",
    "csum_level",
    "skc_to_tcp6_sock",
    "skc_to_tcp_sock",
    "skc_to_tcp_timewait_sock",
    "skc_to_tcp_request_sock",
    "skc_to_udp6_sock",
    "get_task_stack",
    "load_hdr_opt",
    "store_hdr_opt",
    "reserve_hdr_opt",
    "inode_storage_get",
    "inode_storage_delete",
    "d_path",
    "copy_from_user",
    "snprintf_btf",
    "seq_printf_btf",
    "skb_cgroup_classid",
    "redirect_neigh",
    "per_cpu_ptr",
    "this_cpu_ptr",
    "redirect_peer",
    "task_storage_get",
    "task_storage_delete",
    "get_current_task_btf",
    "bprm_opts_set",
    "ktime_get_coarse_ns",
    "ima_inode_hash",
    "sock_from_file",
    "check_mtu",
    "for_each_map_elem",
    "snprintf",
    "sys_bpf",
    "btf_find_by_name_kind",
    "sys_close",
    "timer_init",
    "timer_set_callback",
    "timer_start",
    "timer_cancel",
    "get_func_ip",
    "get_attach_cookie",
    "task_pt_regs",
    "get_branch_snapshot",
    "trace_vprintk",
    "skc_to_unix_sock",
    "kallsyms_lookup_name",
    "find_vma",
    "loop",
    "strncmp",
    "get_func_arg",
    "get_func_ret",
    "get_func_arg_cnt",
    "get_retval",
    "set_retval",
    "xdp_get_buff_len",
    "xdp_load_bytes",
    "xdp_store_bytes",
    "copy_from_user_task",
    "skb_set_tstamp",
    "ima_file_hash",
    "kptr_xchg",
    "map_lookup_percpu_elem",
    "skc_to_mptcp_sock",
    "dynptr_from_mem",
    "ringbuf_reserve_dynptr",
    "ringbuf_submit_dynptr",
    "ringbuf_discard_dynptr",
    "dynptr_read",
    "dynptr_write",
    "dynptr_data",
    "tcp_raw_gen_syncookie_ipv4",
    "tcp_raw_gen_syncookie_ipv6",
    "tcp_raw_check_syncookie_ipv4",
    "tcp_raw_check_syncookie_ipv6",
    "ktime_get_tai_ns",
    "user_ringbuf_drain",
];

/// Numbers of the helpers linerate gives a meaning to or recognises by number.
pub mod id {
    pub const MAP_LOOKUP_ELEM: u32 = 1;
    pub const MAP_UPDATE_ELEM: u32 = 2;
    pub const MAP_DELETE_ELEM: u32 = 3;
    pub const KTIME_GET_NS: u32 = 5;
    pub const TRACE_PRINTK: u32 = 6;
    pub const GET_PRANDOM_U32: u32 = 7;
    pub const GET_SMP_PROCESSOR_ID: u32 = 8;
    pub const TAIL_CALL: u32 = 12;
    pub const REDIRECT: u32 = 23;
    pub const CSUM_DIFF: u32 = 28;
    pub const XDP_ADJUST_HEAD: u32 = 44;
    pub const REDIRECT_MAP: u32 = 51;
    pub const XDP_ADJUST_META: u32 = 54;
    pub const XDP_ADJUST_TAIL: u32 = 65;
    pub const FIB_LOOKUP: u32 = 69;
    pub const KTIME_GET_BOOT_NS: u32 = 125;
    /// `bpf_for_each_map_elem(map, callback, ctx, flags)` (kernel/bpf/bpf_iter.c).
    pub const FOR_EACH_MAP_ELEM: u32 = 164;
    /// `bpf_loop(nr_loops, callback, ctx, flags)` (kernel/bpf/bpf_iter.c).
    pub const LOOP: u32 = 181;
    pub const XDP_GET_BUFF_LEN: u32 = 188;
    pub const XDP_LOAD_BYTES: u32 = 189;
    pub const XDP_STORE_BYTES: u32 = 190;
    // Records, queues, MTU and locks (include/uapi/linux/bpf.h, `__BPF_FUNC_MAPPER`).
    pub const PERF_EVENT_OUTPUT: u32 = 25;
    pub const MAP_PUSH_ELEM: u32 = 87;
    pub const MAP_POP_ELEM: u32 = 88;
    pub const MAP_PEEK_ELEM: u32 = 89;
    pub const SPIN_LOCK: u32 = 93;
    pub const SPIN_UNLOCK: u32 = 94;
    pub const RINGBUF_OUTPUT: u32 = 130;
    pub const RINGBUF_RESERVE: u32 = 131;
    pub const RINGBUF_SUBMIT: u32 = 132;
    pub const RINGBUF_DISCARD: u32 = 133;
    pub const RINGBUF_QUERY: u32 = 134;
    pub const CHECK_MTU: u32 = 163;
    // SYN cookies from raw headers (net/core/filter.c, `bpf_tcp_raw_*_syncookie_*`).
    pub const TCP_RAW_GEN_SYNCOOKIE_IPV4: u32 = 204;
    pub const TCP_RAW_GEN_SYNCOOKIE_IPV6: u32 = 205;
    pub const TCP_RAW_CHECK_SYNCOOKIE_IPV4: u32 = 206;
    pub const TCP_RAW_CHECK_SYNCOOKIE_IPV6: u32 = 207;
    // Reads from any kernel address (kernel/trace/bpf_trace.c), offered to programs loaded with
    // CAP_PERFMON (`bpf_base_func_proto`, kernel/bpf/helpers.c).
    pub const PROBE_READ_KERNEL: u32 = 113;
    pub const PROBE_READ_KERNEL_STR: u32 = 115;
}

/// Map helpers the verifier binds to one map type's operation where a single map reaches the call
/// site (a direct call, or an inlined lookup), and leaves to the generic helper's dispatch through
/// the map's operations otherwise (kernel/bpf/verifier.c, `do_misc_fixups`: the map helper calls
/// whose map pointer is not poisoned are patched to `ops->map_*`).
pub const BOUND_TO_MAP_OPS: [u32; 8] = [
    id::MAP_LOOKUP_ELEM,
    id::MAP_UPDATE_ELEM,
    id::MAP_DELETE_ELEM,
    id::MAP_PUSH_ELEM,
    id::MAP_POP_ELEM,
    id::MAP_PEEK_ELEM,
    id::REDIRECT_MAP,
    id::FOR_EACH_MAP_ELEM,
];

/// How many of r1–r5 helper `id` reads as arguments, from its prototype in the UAPI header
/// `linux/bpf.h`, for the helpers linerate's semantics runs; `None` for the others (read as all
/// five). The verifier checks only these, so a caller need not set the rest.
pub fn argument_count(id: u32) -> Option<usize> {
    let count = match id {
        id::KTIME_GET_NS | id::GET_PRANDOM_U32 | id::GET_SMP_PROCESSOR_ID => 0,
        id::KTIME_GET_BOOT_NS => 0,
        id::SPIN_LOCK | id::SPIN_UNLOCK | id::XDP_GET_BUFF_LEN => 1,
        id::MAP_LOOKUP_ELEM | id::MAP_DELETE_ELEM | id::REDIRECT => 2,
        id::XDP_ADJUST_HEAD | id::XDP_ADJUST_META | id::XDP_ADJUST_TAIL => 2,
        id::MAP_POP_ELEM | id::MAP_PEEK_ELEM => 2,
        id::RINGBUF_SUBMIT | id::RINGBUF_DISCARD | id::RINGBUF_QUERY => 2,
        id::TAIL_CALL | id::REDIRECT_MAP | id::MAP_PUSH_ELEM | id::RINGBUF_RESERVE => 3,
        id::PROBE_READ_KERNEL | id::PROBE_READ_KERNEL_STR => 3,
        id::MAP_UPDATE_ELEM | id::FIB_LOOKUP | id::RINGBUF_OUTPUT => 4,
        id::XDP_LOAD_BYTES | id::XDP_STORE_BYTES | id::LOOP | id::FOR_EACH_MAP_ELEM => 4,
        id::TRACE_PRINTK | id::PERF_EVENT_OUTPUT | id::CSUM_DIFF | id::CHECK_MTU => 5,
        _ => return None,
    };
    Some(count)
}

/// The name of helper `id`, or `"unknown"`.
pub fn helper_name(id: u32) -> &'static str {
    HELPER_NAMES.get(id as usize).copied().unwrap_or("unknown")
}

/// The number of the helper with this name (with or without the `bpf_` prefix).
pub fn helper_id(name: &str) -> Option<u32> {
    let name = name.strip_prefix("bpf_").unwrap_or(name);
    HELPER_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_helper_numbers() {
        assert_eq!(helper_name(1), "map_lookup_elem");
        assert_eq!(helper_name(44), "xdp_adjust_head");
        assert_eq!(helper_id("bpf_fib_lookup"), Some(69));
        assert_eq!(helper_name(100_000), "unknown");
        assert_eq!(argument_count(id::REDIRECT), Some(2));
        assert_eq!(argument_count(id::MAP_UPDATE_ELEM), Some(4));
        assert_eq!(argument_count(id::KTIME_GET_NS), Some(0));
        assert_eq!(argument_count(100_000), None);
        for (n, name) in [
            (id::MAP_LOOKUP_ELEM, "map_lookup_elem"),
            (id::MAP_UPDATE_ELEM, "map_update_elem"),
            (id::MAP_DELETE_ELEM, "map_delete_elem"),
            (id::KTIME_GET_NS, "ktime_get_ns"),
            (id::TRACE_PRINTK, "trace_printk"),
            (id::GET_PRANDOM_U32, "get_prandom_u32"),
            (id::GET_SMP_PROCESSOR_ID, "get_smp_processor_id"),
            (id::TAIL_CALL, "tail_call"),
            (id::REDIRECT, "redirect"),
            (id::CSUM_DIFF, "csum_diff"),
            (id::XDP_ADJUST_HEAD, "xdp_adjust_head"),
            (id::REDIRECT_MAP, "redirect_map"),
            (id::XDP_ADJUST_META, "xdp_adjust_meta"),
            (id::XDP_ADJUST_TAIL, "xdp_adjust_tail"),
            (id::FIB_LOOKUP, "fib_lookup"),
            (id::KTIME_GET_BOOT_NS, "ktime_get_boot_ns"),
            (id::XDP_GET_BUFF_LEN, "xdp_get_buff_len"),
            (id::XDP_LOAD_BYTES, "xdp_load_bytes"),
            (id::PROBE_READ_KERNEL, "probe_read_kernel"),
            (id::PROBE_READ_KERNEL_STR, "probe_read_kernel_str"),
            (id::XDP_STORE_BYTES, "xdp_store_bytes"),
        ] {
            assert_eq!(helper_name(n), name, "helper {n}");
        }
    }
}
