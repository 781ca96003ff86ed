use pkb_core::{Context, Registry, ResourceBody, ResourceError, pkb_resource};

/// A logo, as bytes: a `blob` resource.
#[pkb_resource(uri = "demo://logo.png", mime_type = "image/png")]
async fn logo() -> Result<Vec<u8>, ResourceError> {
    Ok(vec![0x89, b'P', b'N', b'G'])
}

/// A file whose contents are text or bytes, known only when read.
#[pkb_resource(uri = "demo://files/{name}")]
async fn file(name: String) -> Result<ResourceBody, ResourceError> {
    Ok(if name.ends_with(".txt") {
        ResourceBody::Text(format!("the text of {name}"))
    } else {
        ResourceBody::Blob(name.into_bytes())
    })
}

#[tokio::main]
async fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let ctx = || Context::detached(());
    let (mime, body) = registry.read_resource(ctx(), "demo://logo.png").await.unwrap();
    assert_eq!(mime, Some("image/png"));
    assert!(matches!(body, ResourceBody::Blob(bytes) if bytes.starts_with(&[0x89])));
    let (_, body) = registry.read_resource(ctx(), "demo://files/a.txt").await.unwrap();
    assert!(matches!(body, ResourceBody::Text(text) if text == "the text of a.txt"));
    let (_, body) = registry.read_resource(ctx(), "demo://files/a.bin").await.unwrap();
    assert!(matches!(body, ResourceBody::Blob(_)));
}
