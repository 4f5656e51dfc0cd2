package dev.hedgerow.catalog;

import dev.hedgerow.state.VersionedDoc;

import java.util.Collection;

/**
 * How a configuration file stands against the stored catalog, which decides whether an instance starting from it
 * publishes it. Files are ordered by their {@code revision} (a file without one is older than any file with one), so
 * that during a rolling deploy an instance of the old version, cold-starting after the new one published, cannot put
 * the old file back: the highest revision stored wins, whichever instance started last. Between files without a
 * revision the last one started wins, as before revisions existed. Immutable.
 *
 * @param verdict        what to do with the file
 * @param storedRevision the highest revision among the stored orgs the file covers (0: none)
 * @param storedHash     with {@link Verdict#REVISION_NOT_RAISED}, the source hash stored under the file's revision
 */
public record FileStanding(Verdict verdict, long storedRevision, String storedHash) {

    public enum Verdict {
        /** The file is newer than the stored catalog, or is the stored catalog's own file: publish it. */
        PUBLISH,
        /** A newer file was published: serve the stored catalog. */
        OLDER,
        /** The stored catalog came from another text under the same revision: serve it, the operator must raise it. */
        REVISION_NOT_RAISED
    }

    /** The standing of a file ({@code revision}, {@code sourceHash}) against the stored orgs it covers. */
    public static FileStanding of(long revision, String sourceHash, Collection<VersionedDoc> stored) {
        long highest = stored.stream().mapToLong(VersionedDoc::revision).max().orElse(LoadedCatalog.NO_REVISION);
        if (revision < highest) {
            return new FileStanding(Verdict.OLDER, highest, null);
        }
        if (revision != LoadedCatalog.NO_REVISION) {
            for (VersionedDoc d : stored) {
                if (d.revision() == revision && !sourceHash.equals(d.sourceHash())) {
                    return new FileStanding(Verdict.REVISION_NOT_RAISED, highest, d.sourceHash());
                }
            }
        }
        return new FileStanding(Verdict.PUBLISH, highest, null);
    }

    /**
     * Whether one org's document from this file ({@code revision}, {@code sourceHash}) may replace the stored one:
     * the same file's is kept (with any admin edit made since), a newer file's replaces it, and so does another
     * file without a revision over one without (the last started wins). Checked again for each org's
     * compare-and-set, so a file published meanwhile by another instance is not overwritten by an older one.
     */
    static boolean replaces(long revision, String sourceHash, VersionedDoc stored) {
        if (sourceHash.equals(stored.sourceHash())) {
            return false;
        }
        return revision > stored.revision()
                || revision == LoadedCatalog.NO_REVISION && stored.revision() == LoadedCatalog.NO_REVISION;
    }
}
