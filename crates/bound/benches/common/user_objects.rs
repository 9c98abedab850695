//! The objects a user brings to a bench: files named in an environment variable (`:`-separated),
//! each on its first XDP program, as `linerate bound` picks it by default.

use linerate_bpf::Object;

/// One user object and the program the bench takes.
pub struct UserObject {
    /// The file name.
    pub name: String,
    pub object: Object,
    pub entry: usize,
}

/// The objects environment variable `var` names; what cannot be read, or has no XDP program,
/// goes to `skipped` with the reason.
pub fn user_objects(var: &str, skipped: &mut Vec<String>) -> Vec<UserObject> {
    let list = std::env::var(var).unwrap_or_default();
    let mut out = Vec::new();
    for path in list.split(':').filter(|p| !p.is_empty()) {
        let path = std::path::Path::new(path);
        let name = path.file_name().map_or(path.display().to_string(), |n| {
            n.to_string_lossy().into_owned()
        });
        match linerate_io::load_object(path) {
            Ok(object) => match object
                .programs
                .iter()
                .position(|p| p.require_xdp("bench", "").is_ok())
            {
                Some(entry) => out.push(UserObject {
                    name,
                    object,
                    entry,
                }),
                None => skipped.push(format!("{name}: no XDP program")),
            },
            Err(e) => skipped.push(format!("{name}: {e}")),
        }
    }
    out
}
