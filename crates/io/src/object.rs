//! Objects as users have them: a clang-compiled BPF ELF file, or the text `llvm-objdump -d`
//! printed for one (of any LLVM release), told apart by their first bytes.

use std::path::Path;

use linerate_bpf::asm::AsmError;
use linerate_bpf::btf::Btf;
use linerate_bpf::{Object, ObjectError};

use crate::error::{read, Error, FileKind};

/// Bytes that are neither a readable BPF ELF object nor `llvm-objdump -d` text with a program.
#[derive(Debug, thiserror::Error)]
pub enum ObjectFormatError {
    #[error("empty file: expected a BPF ELF object or llvm-objdump text")]
    Empty,
    #[error(transparent)]
    Elf(ObjectError),
    #[error("not a BPF object: neither an ELF file nor llvm-objdump text")]
    NotAnObject,
    #[error(transparent)]
    Text(AsmError),
    #[error(
        "no programs: the text holds no disassembled function (expected `llvm-objdump -d` output)"
    )]
    NoPrograms,
}

/// Reads an object from the bytes of an ELF file or of `llvm-objdump -d` text; `name` names the
/// object (and its global-data maps, as the file name does for clang objects).
pub fn parse_object(bytes: &[u8], name: &str) -> Result<Object, ObjectFormatError> {
    parse_object_with(bytes, name, None)
}

/// [`parse_object`] with an ELF object's CO-RE relocations resolved against `target` (`None`:
/// the running kernel's BTF).
pub fn parse_object_with(
    bytes: &[u8],
    name: &str,
    target: Option<&Btf>,
) -> Result<Object, ObjectFormatError> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(ObjectFormatError::Empty);
    }
    if bytes.starts_with(b"\x7fELF") {
        return linerate_bpf::object::read_object_with(
            bytes,
            name,
            &linerate_bpf::ReadOptions {
                core_target: target,
                ..Default::default()
            },
        )
        .map_err(ObjectFormatError::Elf);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ObjectFormatError::NotAnObject)?;
    let object =
        linerate_bpf::objdump::read_objdump_text(text, name).map_err(ObjectFormatError::Text)?;
    if object.programs.is_empty() {
        return Err(ObjectFormatError::NoPrograms);
    }
    Ok(object)
}

/// Reads an object file (ELF or `llvm-objdump -d` text), named after the file's stem.
pub fn load_object(path: &Path) -> Result<Object, Error> {
    load_object_with(path, None)
}

/// [`load_object`] with CO-RE relocations resolved against `target` (`None`: the running
/// kernel's BTF).
pub fn load_object_with(path: &Path, target: Option<&Btf>) -> Result<Object, Error> {
    let bytes = read(path, FileKind::Object)?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "object".into());
    parse_object_with(&bytes, &name, target).map_err(|error| Error::Object {
        path: path.to_path_buf(),
        error,
    })
}
