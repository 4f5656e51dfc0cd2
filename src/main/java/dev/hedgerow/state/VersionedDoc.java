package dev.hedgerow.state;

/** A stored catalog document: its JSON, the hash of the file it came from (null after admin edits), its version. */
public record VersionedDoc(String json, String sourceHash, long version) {
}
