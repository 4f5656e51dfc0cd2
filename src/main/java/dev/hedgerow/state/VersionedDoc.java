package dev.hedgerow.state;

/**
 * A stored catalog document: its JSON (empty for an org the configuration file no longer has), the hash of the file
 * text it came from and that file's {@code revision} (0: the file had none), both kept through admin edits so that
 * only a changed, and not an older, file is published over them, and its version.
 */
public record VersionedDoc(String json, String sourceHash, long revision, long version) {

    /** This document as stored at {@code storedVersion}. */
    public VersionedDoc withVersion(long storedVersion) {
        return new VersionedDoc(json, sourceHash, revision, storedVersion);
    }
}
