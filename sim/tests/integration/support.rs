//! What several of this binary's modules build the same way against an S3 client: a listing
//! page as the text the differential checks compare.

use tidemark_reference::s3_client::ListPage;

/// A listing page's objects (`key:size`) and common prefixes, in the order the store gave them.
pub fn page_entries(page: &ListPage) -> (Vec<String>, Vec<&str>) {
    let objs = page
        .objects
        .iter()
        .map(|o| format!("{}:{}", o.key, o.size))
        .collect();
    let cps = page.common_prefixes.iter().map(String::as_str).collect();
    (objs, cps)
}
