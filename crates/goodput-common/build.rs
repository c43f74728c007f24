// Builds the built-in tiktoken encodings' rank tables at compile time (see
// src/tokenizer/rank_table.rs): a run maps them from the binary instead of
// parsing 3.6 MB of base64 and filling a table at every start.

use std::path::Path;

#[allow(dead_code)]
mod rank_table {
    include!("src/tokenizer/rank_table.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=src/tokenizer/rank_table.rs");
    let Some(out) = std::env::var_os("OUT_DIR") else {
        panic!("cargo sets OUT_DIR for build scripts");
    };
    for name in ["o200k_base", "cl100k_base"] {
        let source = format!("assets/{name}.tiktoken");
        println!("cargo:rerun-if-changed={source}");
        let text =
            std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("reading {source}: {e}"));
        let (arena, offsets, slots) =
            rank_table::build_table(&text).unwrap_or_else(|e| panic!("{source}: {e}"));
        for (what, bytes) in [("arena", arena), ("offsets", offsets), ("slots", slots)] {
            let path = Path::new(&out).join(format!("{name}.{what}"));
            std::fs::write(&path, bytes)
                .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        }
    }
}
