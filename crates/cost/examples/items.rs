//! Prints every item key a complete model must price, then the map-operation families (priced per
//! key size as `<family>.k<size>`, or marked unsupported as a whole).

fn main() {
    for item in linerate_cost::item::universe() {
        println!("{item}");
    }
    for (op, map_type) in linerate_cost::item::map_families() {
        println!("{}.k<size>", linerate_cost::item::family_key(op, map_type));
    }
}
