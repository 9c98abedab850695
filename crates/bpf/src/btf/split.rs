//! Split BTF: a section that extends a base BTF, as each kernel module's BTF
//! (`/sys/kernel/btf/<module>`) extends vmlinux's.
//!
//! The kernel's rules (kernel/bpf/btf.c, `btf_parse_module` and `btf_parse_str_sec`; libbpf's
//! `btf__new_split` in tools/lib/bpf/btf.c agrees): the split section's first type takes the id
//! after the base's last (`start_id = btf_nr_types(base)`, which counts `void`), and its string
//! offsets continue after the base's string section (`start_str_off = base->hdr.str_len`), so a
//! type of the split section names a base string by the base's offset and its own strings by
//! their offset plus the base's string-section length. A split section's string section may be
//! empty and need not start with an empty string (only a base's must); when not empty it ends in
//! NUL. Types may refer to base types by id, and lookups ([`Btf::get`], [`Btf::str_at`]) fall
//! through to the base.

use std::sync::Arc;

use super::{Btf, BtfError, TypeId};

impl Btf {
    /// Parses a little-endian BTF section split from `base` (see the module documentation).
    pub fn parse_split(data: &[u8], base: Arc<Btf>) -> Result<Btf, BtfError> {
        Self::parse_on(data, Some(base))
    }

    /// The BTF this one is split from, if it is split.
    pub fn base(&self) -> Option<&Btf> {
        self.base.as_deref()
    }

    /// The id of this section's first type: 1 for standalone BTF, the id after the base's last
    /// type for split BTF.
    pub fn start_id(&self) -> TypeId {
        match self.base.as_deref() {
            None => 1,
            Some(base) => {
                let own = TypeId::try_from(base.len()).unwrap_or(TypeId::MAX);
                base.start_id().saturating_add(own)
            }
        }
    }

    /// The offset of this section's first string: 0 for standalone BTF, the total length of the
    /// base's string sections for split BTF.
    pub fn start_str_off(&self) -> u32 {
        match self.base.as_deref() {
            None => 0,
            Some(base) => {
                let own = u32::try_from(base.strings.len()).unwrap_or(u32::MAX);
                base.start_str_off().saturating_add(own)
            }
        }
    }
}

/// The kernel's check of a split section's strings: empty, or ending in NUL.
pub(super) fn check_strings(strings: &[u8]) -> Result<(), BtfError> {
    match strings.last() {
        None | Some(0) => Ok(()),
        Some(_) => {
            let last = u32::try_from(strings.len() - 1).unwrap_or(u32::MAX);
            Err(BtfError::BadString(last))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{build, info};
    use super::super::Kind;
    use super::*;

    /// Base: [1] int (4 bytes), [2] struct s { int a; }. Strings "\0int\0s\0a\0" (9 bytes).
    fn base() -> Arc<Btf> {
        let strings = b"\0int\0s\0a\0";
        let types = [1, info(1, 0), 4, 0x20, 5, info(4, 1), 4, 7, 1, 0];
        Arc::new(Btf::parse(&build(&types, strings)).unwrap())
    }

    /// Split strings: "mod_func" at 9 (offset 0 of its own section), "x" at 18, "s_ptr" at 20.
    const SPLIT_STRINGS: &[u8] = b"mod_func\0x\0s_ptr\0";

    /// Split on [`base`]: [3] ptr -> [2] (base struct), [4] func_proto int (x: [3]),
    /// [5] func mod_func -> [4], [6] typedef s_ptr -> [3], [7] typedef named "int" (the base's
    /// string, offset 1) -> [6].
    fn split_types() -> Vec<u32> {
        vec![
            0,
            info(2, 0),
            2,
            0,
            info(13, 1),
            1,
            18,
            3,
            9,
            info(12, 1),
            4,
            20,
            info(8, 0),
            3,
            1,
            info(8, 0),
            6,
        ]
    }

    #[test]
    fn ids_and_strings_continue_after_the_base() {
        let split = Btf::parse_split(&build(&split_types(), SPLIT_STRINGS), base()).unwrap();
        assert_eq!(split.start_id(), 3);
        assert_eq!(split.start_str_off(), 9);
        assert_eq!(split.len(), 5);
        let ids: Vec<TypeId> = split.types().map(|(id, _)| id).collect();
        assert_eq!(ids, [3, 4, 5, 6, 7]);
        // A base type by id, with its base-string name.
        assert_eq!(split.name(split.ty(2).unwrap()).unwrap(), "s");
        assert_eq!(split.get(0), None);
        assert_eq!(split.get(8), None);
        // The function's own name, its parameter's, the pointer's target in the base.
        let func = split.ty(5).unwrap();
        assert_eq!(split.name(func).unwrap(), "mod_func");
        let Kind::Func { proto, .. } = func.kind else {
            panic!("{func:?}")
        };
        let Kind::FuncProto { ret, params } = &split.ty(proto).unwrap().kind else {
            panic!("not a prototype")
        };
        assert_eq!(*ret, 1);
        assert_eq!(split.str_at(params[0].name_off).unwrap(), "x");
        let (target, ty) = split.skip_mods_and_typedefs(7).unwrap();
        assert_eq!(target, 3);
        assert_eq!(ty.unwrap().kind, Kind::Ptr(2));
        assert_eq!(split.name(split.ty(7).unwrap()).unwrap(), "int");
        assert_eq!(split.name(split.ty(6).unwrap()).unwrap(), "s_ptr");
        assert_eq!(split.resolve_size(7).unwrap(), 8);
        assert_eq!(split.resolve_size(2).unwrap(), 4);
        // Offsets past the split's strings are errors, not the base's.
        assert_eq!(split.str_at(9 + 18), Err(BtfError::BadStringOffset(27)));
        // Writing the split section back gives the same section.
        let again = Btf::parse_split(&split.to_bytes(), base()).unwrap();
        assert_eq!(again, split);
    }

    #[test]
    fn a_split_of_a_split_continues_after_both() {
        let first =
            Arc::new(Btf::parse_split(&build(&split_types(), SPLIT_STRINGS), base()).unwrap());
        // [8] ptr -> [5], named "x" (offset 18, in the first split's strings).
        let second = Btf::parse_split(&build(&[18, info(2, 0), 5], b""), first).unwrap();
        assert_eq!(second.start_id(), 8);
        assert_eq!(second.start_str_off(), 9 + 17);
        assert_eq!(second.name(second.ty(8).unwrap()).unwrap(), "x");
        assert_eq!(second.name(second.ty(5).unwrap()).unwrap(), "mod_func");
        assert_eq!(second.name(second.ty(1).unwrap()).unwrap(), "int");
    }

    #[test]
    fn malformed_split_sections_are_errors() {
        // Strings not ending in NUL.
        let err = Btf::parse_split(&build(&[], b"abc"), base()).unwrap_err();
        assert_eq!(err, BtfError::BadString(2));
        // An unknown kind is reported with the split id it would have had.
        let err = Btf::parse_split(&build(&[0, info(30, 0), 0], b""), base()).unwrap_err();
        assert!(
            matches!(
                err,
                BtfError::UnknownKind {
                    kind: 30,
                    id: 3,
                    ..
                }
            ),
            "{err}"
        );
        // Every truncation is an error or a shorter valid parse, never a panic.
        let full = build(&split_types(), SPLIT_STRINGS);
        for len in 0..full.len() {
            let _ = Btf::parse_split(&full[..len], base());
        }
    }

    #[test]
    fn split_btf_is_not_fixed_up() {
        let split = Btf::parse_split(&build(&split_types(), SPLIT_STRINGS), base()).unwrap();
        assert!(split.fixed_for_kernel(&Default::default()).is_err());
    }
}
