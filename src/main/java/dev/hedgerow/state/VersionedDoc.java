package dev.hedgerow.state;

/**
 * A stored catalog document: its JSON (empty for an org the configuration file no longer has), the hash of the file
 * text it came from, the hash of the org as that file has it ({@code orgHash}; null when stored before it was kept,
 * or for a removed org) and that file's {@code revision} (0: the file had none), all kept through admin edits so that
 * only a changed, and not an older, file is published over them, and a newer file whose own section of the org is
 * unchanged keeps the org's admin edits; its version; and, for a document an instance wrote back after the store lost
 * the org, the version it had before the loss ({@code restoredFrom}; 0: not written back, or written since).
 */
public record VersionedDoc(String json, String sourceHash, String orgHash, long revision, long version,
                           long restoredFrom) {

    /** A document that is not a write-back: every edit and publication writes one. */
    public VersionedDoc(String json, String sourceHash, String orgHash, long revision, long version) {
        this(json, sourceHash, orgHash, revision, version, 0);
    }

    /** A document without the org's own hash (a removed org; a test's). */
    public VersionedDoc(String json, String sourceHash, long revision, long version) {
        this(json, sourceHash, null, revision, version);
    }

    /** This document as stored at {@code storedVersion}. */
    public VersionedDoc withVersion(long storedVersion) {
        return new VersionedDoc(json, sourceHash, orgHash, revision, storedVersion, restoredFrom);
    }

    /**
     * How late this document is in the org's history, comparable across a loss of the store's data: the version it
     * had before the loss when it was written back since ({@link #restoredFrom}), its version otherwise (a pending
     * edit's negative version counts as the one it will take). A write-back gives the org a version from the store's
     * clock, later than any before the loss, so two instances' copies are compared by this, not by their versions.
     */
    public long lineage() {
        return restoredFrom > 0 ? restoredFrom : Math.abs(version);
    }

    /** This document as written back after the store lost the org: marked with the lineage it had. */
    public VersionedDoc writtenBack() {
        return new VersionedDoc(json, sourceHash, orgHash, revision, version, lineage());
    }
}
