//! The guide in `retry_kit::apalis`'s docs and the `nightly_export` example, run as tests so
//! that neither stops working unnoticed.

mod guide {
    include!("../../../retry-runtime/src/apalis/guide.rs");

    pub(super) fn run() -> Result<(), Box<dyn std::error::Error>> {
        main()
    }
}

#[path = "../examples/nightly_export.rs"]
mod nightly_export;

#[test]
fn the_guide_in_the_docs_runs() {
    guide::run().expect("the guide's worker ends with its task done");
}

#[test]
fn the_nightly_export_example_runs() {
    nightly_export::main();
}
