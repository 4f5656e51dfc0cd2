package dev.hedgerow.state;

/**
 * A stored catalog document: its JSON (empty for an org the configuration file no longer has), the hash of the file
 * text it came from, the hash of the org as that file has it ({@code orgHash}; null when stored before it was kept,
 * or for a removed org) and that file's {@code revision} (0: the file had none), all kept through admin edits so that
 * only a changed, and not an older, file is published over them, and a newer file whose own section of the org is
 * unchanged keeps the org's admin edits; and its version.
 */
public record VersionedDoc(String json, String sourceHash, String orgHash, long revision, long version) {

    /** A document without the org's own hash (a removed org; a test's). */
    public VersionedDoc(String json, String sourceHash, long revision, long version) {
        this(json, sourceHash, null, revision, version);
    }

    /** This document as stored at {@code storedVersion}. */
    public VersionedDoc withVersion(long storedVersion) {
        return new VersionedDoc(json, sourceHash, orgHash, revision, storedVersion);
    }
}
