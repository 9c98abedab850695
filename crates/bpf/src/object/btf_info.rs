//! The object's BTF as the model keeps it: `.BTF` parsed, `.BTF.ext` records read, and the
//! `func_info` / `line_info` of each linked program remapped from section-relative instruction
//! indices to linked slots.
//!
//! BTF is optional for reading: a `.BTF` that does not parse leaves [`Object::btf`] empty (only
//! `.maps` needs it, and reports its own error), and a `.BTF.ext` that does not parse leaves the
//! records empty with the reason in [`ObjectBtf::ext_error`]. The kernel loader then loads
//! without BTF where the program allows.
//!
//! [`Object::btf`]: crate::program::Object::btf

use std::collections::HashMap;

use crate::btf::{Btf, SectionLayout, TypeId};
use crate::btf_ext::{BtfExt, SourceLine};
use crate::program::{FuncInfo, Function, LineInfo, ObjectBtf};

/// Reads `.BTF` and `.BTF.ext` from `(name, data)` section pairs.
pub(super) fn read<'a>(
    sections: impl Iterator<Item = (&'a str, &'a [u8])>,
    layout: &SectionLayout,
) -> Option<ObjectBtf> {
    let mut btf_data = None;
    let mut ext_data = None;
    for (name, data) in sections {
        match name {
            ".BTF" => btf_data = btf_data.or(Some(data)),
            ".BTF.ext" => ext_data = ext_data.or(Some(data)),
            _ => {}
        }
    }
    let btf = Btf::parse(btf_data?).ok()?;
    let (ext, ext_error) = match ext_data.map(|d| BtfExt::parse(d, &btf)) {
        None => (BtfExt::default(), None),
        Some(Ok(ext)) => (ext, None),
        Some(Err(e)) => (BtfExt::default(), Some(e.to_string())),
    };
    let kernel_bytes = btf.fixed_for_kernel(layout).map(|fixed| fixed.to_bytes());
    Some(ObjectBtf {
        btf,
        ext,
        ext_error,
        kernel_bytes,
    })
}

/// `.BTF.ext` records indexed by `(ELF section index, instruction index)`.
#[derive(Default)]
pub(super) struct SlotRecords<'b> {
    funcs: HashMap<(usize, usize), TypeId>,
    lines: HashMap<(usize, usize), &'b SourceLine>,
}

impl<'b> SlotRecords<'b> {
    /// Indexes the records of `btf`; `section_index` finds a section by name.
    pub(super) fn new(
        btf: Option<&'b ObjectBtf>,
        section_index: impl Fn(&str) -> Option<usize>,
    ) -> SlotRecords<'b> {
        let mut out = SlotRecords::default();
        let Some(btf) = btf else {
            return out;
        };
        for f in &btf.ext.func_info {
            if let Some(sec) = section_index(&f.section) {
                out.funcs.insert((sec, f.insn), f.type_id);
            }
        }
        for l in &btf.ext.line_info {
            if let Some(sec) = section_index(&l.section) {
                out.lines.insert((sec, l.insn), &l.source);
            }
        }
        out
    }

    /// The `func_info` and `line_info` of a linked program whose slot `i` came from instruction
    /// `origin[i].1` of section `origin[i].0`. `func_info` is all or nothing: the kernel refuses
    /// a program some of whose functions lack one.
    pub(super) fn remap(
        &self,
        origin: &[(usize, usize)],
        functions: &[Function],
    ) -> (Vec<FuncInfo>, Vec<LineInfo>) {
        let func_info: Option<Vec<FuncInfo>> = functions
            .iter()
            .map(|f| {
                let from = origin.get(f.start)?;
                let type_id = *self.funcs.get(from)?;
                Some(FuncInfo {
                    slot: f.start,
                    type_id,
                })
            })
            .collect();
        let line_info = origin
            .iter()
            .enumerate()
            .filter_map(|(slot, from)| {
                self.lines.get(from).map(|&source| LineInfo {
                    slot,
                    source: source.clone(),
                })
            })
            .collect();
        (func_info.unwrap_or_default(), line_info)
    }
}
