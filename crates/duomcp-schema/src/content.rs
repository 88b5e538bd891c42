//! Content blocks and resource contents.
//!
//! The `type` discriminator of a content block is written by the enclosing union
//! ([`ContentBlock`] or [`crate::SamplingMessageContentBlock`]); the variant structs do not
//! carry it themselves.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::common::{de_util, Annotations, Icon, JsonObject};
use crate::meta::Meta;

/// Content inside prompts, tool results and sampling messages (`ContentBlock`), tagged on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// `type: "text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `type: "image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `type: "audio"`.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `type: "resource_link"`.
    #[serde(rename = "resource_link")]
    ResourceLink(ResourceLink),
    /// `type: "resource"`.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// An image block from base64 `data` and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 `data` and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent::new(data, mime_type))
    }

    /// A link to a resource.
    pub fn resource_link(link: ResourceLink) -> Self {
        Self::ResourceLink(link)
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource::new(contents))
    }

    /// The text, if this is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        Self::Text(c)
    }
}
impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        Self::Image(c)
    }
}
impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        Self::Audio(c)
    }
}
impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        Self::ResourceLink(c)
    }
}
impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        Self::Resource(c)
    }
}

/// Text provided to or from an LLM (`TextContent`, `type: "text"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextContent {
    /// The text content of the message.
    pub text: String,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl TextContent {
    /// Text content without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// An image provided to or from an LLM (`ImageContent`, `type: "image"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// The base64-encoded image data.
    pub data: String,
    /// The MIME type of the image.
    pub mime_type: String,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ImageContent {
    /// Image content from base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }
}

/// Audio provided to or from an LLM (`AudioContent`, `type: "audio"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// The base64-encoded audio data.
    pub data: String,
    /// The MIME type of the audio.
    pub mime_type: String,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl AudioContent {
    /// Audio content from base64 `data` and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }
}

/// A link to a resource the server can read (`ResourceLink`, `type: "resource_link"`).
///
/// Not guaranteed to appear in `resources/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The URI of this resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description of what this resource represents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of this resource, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The size of the raw resource content in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Optional set of sized icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ResourceLink {
    /// A link to the resource `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }
}

/// Resource contents embedded in a prompt or tool result (`EmbeddedResource`, `type: "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The embedded contents.
    pub resource: ResourceContents,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// Embeds `resource` without annotations.
    pub fn new(resource: ResourceContents) -> Self {
        Self {
            resource,
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The contents of a resource: text or binary (the concrete forms of `ResourceContents`).
///
/// Discriminated by key: an object with `text` is [`ResourceContents::Text`], one with
/// `blob` is [`ResourceContents::Blob`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Text(TextResourceContents::new(uri, text))
    }

    /// Binary (base64 `blob`) contents of `uri`.
    pub fn blob(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self::Blob(BlobResourceContents::new(uri, blob))
    }

    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text(t) => t.mime_type.as_deref(),
            Self::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "resource contents")?;
        // `text` wins if both are present (the schema lists the text form first).
        if map.contains_key("text") {
            de_util::convert(map, "TextResourceContents").map(Self::Text)
        } else if map.contains_key("blob") {
            de_util::convert(map, "BlobResourceContents").map(Self::Blob)
        } else {
            Err(de::Error::custom(
                "invalid resource contents: neither `text` nor `blob` present",
            ))
        }
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(c: TextResourceContents) -> Self {
        Self::Text(c)
    }
}
impl From<BlobResourceContents> for ResourceContents {
    fn from(c: BlobResourceContents) -> Self {
        Self::Blob(c)
    }
}

/// Text contents of a resource (`TextResourceContents`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The URI of this resource.
    pub uri: String,
    /// The MIME type of this resource, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text of the item (only if it can be represented as text).
    pub text: String,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl TextResourceContents {
    /// Text contents of `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            text: text.into(),
            ..Self::default()
        }
    }
}

/// Binary contents of a resource (`BlobResourceContents`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The URI of this resource.
    pub uri: String,
    /// The MIME type of this resource, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded binary data of the item.
    pub blob: String,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl BlobResourceContents {
    /// Binary contents of `uri` from base64 `blob`.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            blob: blob.into(),
            ..Self::default()
        }
    }
}

crate::meta::impl_has_meta!(
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
    TextResourceContents,
    BlobResourceContents
);
