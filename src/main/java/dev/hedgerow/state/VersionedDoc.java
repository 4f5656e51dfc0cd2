package dev.hedgerow.state;

/**
 * A stored catalog document: its JSON (empty for an org the configuration file no longer has), the hash of the file
 * text it came from (kept through admin edits, so that only a changed file is published over them), its version.
 */
public record VersionedDoc(String json, String sourceHash, long version) {
}
