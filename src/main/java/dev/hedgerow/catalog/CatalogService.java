package dev.hedgerow.catalog;

import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Keeps this instance's view of the catalog in step with the state store. At start the file's orgs are
 * published (only when the file changed since it was last published, so admin edits survive restarts, and never
 * when a file of a higher revision was published, so an old instance of a rolling deploy cannot revert a newer one:
 * {@link FileStanding}) and stored orgs the file no longer has are removed; then the
 * stored versions are polled and any org whose version moved is reloaded, so a change written by another instance
 * is seen within one poll interval without a restart. Admin edits are compare-and-set writes. Thread-safe.
 */
public final class CatalogService {
    private final StateStore store;
    private final Scheduler scheduler;
    private final Function<Org, String> encode;
    private final Function<String, Org> decode;
    private final AtomicReference<Catalog> current = new AtomicReference<>(Catalog.empty());
    private final System.Logger log = System.getLogger("dev.hedgerow.catalog");
    private volatile FileStatus fileStatus = new FileStatus(LoadedCatalog.NO_REVISION, FileStatus.NOT_YET);
    private volatile Cancellable poller = Cancellable.NONE;
    private volatile boolean stopped;
    /**
     * The stored orgs this instance cannot read, by the version it could not (an instance whose
     * {@code HEDGEROW_SECRET_KEY} is not the one the catalog was sealed with reads none): each is logged once per
     * version, not at every poll, and readiness reports them ({@link #unreadableOrgs}).
     */
    private final Map<String, Long> unreadable = new java.util.concurrent.ConcurrentHashMap<>();
    /** The file this instance published (null before it did), and whether as the whole catalog. */
    private volatile LoadedCatalog file;
    private volatile boolean wholeCatalog;

    /**
     * @param scheduler times the waits for another instance's publication (see {@link #PUBLISH_LOCK})
     */
    public CatalogService(StateStore store, Scheduler scheduler, Function<Org, String> encode,
                          Function<String, Org> decode) {
        this.store = store;
        this.scheduler = scheduler;
        this.encode = encode;
        this.decode = decode;
    }

    public Catalog current() {
        return current.get();
    }

    /**
     * The stored document of an org that the configuration file no longer has. The org's catalog is not deleted but
     * replaced by this, a new version: every instance then drops the org at its next poll, and none writes it back
     * (an instance's outage mirror re-seeds an org that is missing from the store, not one stored as removed).
     */
    public static final String REMOVED = "";

    /**
     * Publishes a loaded file, which is the whole catalog: an org whose stored copy came from the same file text is
     * left as is, and a stored org the file no longer has is removed (see {@link #REMOVED}); a file older than the
     * stored catalog is not published at all (see {@link FileStanding}).
     */
    public Uni<Void> publish(LoadedCatalog file) {
        return publish(file, true);
    }

    /**
     * Publishes a loaded file; with {@code wholeCatalog}, stored orgs the file does not have are removed. Without it
     * (the bundled demo) other orgs are left alone, and only the file's own orgs decide whether it is older than the
     * stored catalog. An older file, or one whose revision was not raised, is logged once and this instance serves
     * the stored catalog.
     */
    public Uni<Void> publish(LoadedCatalog file, boolean wholeCatalog) {
        this.file = file;
        this.wholeCatalog = wholeCatalog;
        // most starts find their file published already (every instance of a deploy starts from the same file, and
        // Lambda or Knative start many at once when traffic comes): they decide so from one read, without the lock,
        // which only an instance with something to write takes (and then reads again under it)
        return read(file, wholeCatalog).flatMap(seen -> {
            if (!seen.writes(file)) {
                return settle(file, seen, false);
            }
            String owner = UUID.randomUUID().toString();
            return lock(owner, Duration.ZERO).flatMap(held -> read(file, wholeCatalog).flatMap(again -> write(file,
                            again))
                    .onTermination().call(() -> held ? store.unlock(PUBLISH_LOCK, owner).onFailure().recoverWithNull()
                            : Uni.createFrom().voidItem()));
        });
    }

    /**
     * The fleet-wide lock a publication holds from its first read to its last write, so that two instances starting
     * at once from different files publish one after the other, and the later one sees what the earlier one wrote:
     * without it, an older file could add an org that the newer file's publication, reading before, never saw to
     * remove. Held for milliseconds; its TTL frees it when its holder dies mid-publication.
     */
    public static final String PUBLISH_LOCK = "catalog-publish";
    static final Duration PUBLISH_LOCK_TTL = Duration.ofSeconds(10);
    /** Past this much waiting (more than the TTL: a dead holder's lock has expired), a publication goes ahead alone. */
    static final Duration PUBLISH_LOCK_WAIT = Duration.ofSeconds(12);
    private static final Duration LOCK_RECHECK = Duration.ofMillis(100);

    /** Takes the publication lock, waiting while another instance holds it; false once {@code waited} is too long. */
    private Uni<Boolean> lock(String owner, Duration waited) {
        return store.tryLock(PUBLISH_LOCK, owner, PUBLISH_LOCK_TTL).flatMap(taken -> {
            if (taken) {
                return Uni.createFrom().item(true);
            }
            if (waited.compareTo(PUBLISH_LOCK_WAIT) >= 0) {
                log.log(System.Logger.Level.WARNING, "the catalog publication lock stayed taken for "
                        + waited.toMillis() + " ms: publishing the configuration file without it");
                return Uni.createFrom().item(false);
            }
            return store.lockRemainingMillis(PUBLISH_LOCK).flatMap(left -> {
                Duration pause = Duration.ofMillis(Math.max(1, Math.min(left, LOCK_RECHECK.toMillis())));
                return Uni.createFrom().<Void>emitter(em -> scheduler.schedule(pause, () -> em.complete(null)))
                        .flatMap(x -> lock(owner, waited.plus(pause)));
            });
        });
    }

    /** What a publication read: the stored documents of the orgs the file covers, and how the file stands. */
    private record Seen(Map<String, Optional<VersionedDoc>> stored, FileStanding standing) {
        /** Whether publishing the file would write anything (an org of it, or the removal of one it lacks). */
        boolean writes(LoadedCatalog file) {
            if (standing.verdict() != FileStanding.Verdict.PUBLISH) {
                return false;
            }
            Set<String> inFile = new HashSet<>();
            file.orgs().forEach(o -> inFile.add(o.id()));
            return stored.entrySet().stream().anyMatch(e -> overwrites(file, inFile.contains(e.getKey()),
                    e.getValue()));
        }
    }

    /**
     * Whether the file's document for one org is written over {@code stored}: its own org when the store has none, or
     * over a stored one the file replaces ({@link FileStanding#replaces}); the removal of an org the file lacks
     * ({@code inFile} false) only over one stored as present.
     */
    private static boolean overwrites(LoadedCatalog file, boolean inFile, Optional<VersionedDoc> stored) {
        if (stored.isEmpty()) {
            return inFile;
        }
        VersionedDoc doc = stored.get();
        return FileStanding.replaces(file.revision(), file.sourceHash(), doc) && (inFile || !removed(doc));
    }

    /** Reads the stored orgs the file covers (with {@code wholeCatalog}, every stored org) and judges the file. */
    private Uni<Seen> read(LoadedCatalog file, boolean wholeCatalog) {
        return store.catalogVersions().flatMap(versions -> {
            Set<String> covered = new TreeSet<>();
            file.orgs().forEach(o -> covered.add(o.id()));
            if (wholeCatalog) {
                covered.addAll(versions.keySet());
            }
            return readAll(covered);
        }).map(stored -> new Seen(stored, FileStanding.of(file.revision(), file.sourceHash(),
                stored.values().stream().flatMap(Optional::stream).toList())));
    }

    /** Publishes what {@code seen} says the file replaces (under the lock), then settles. */
    private Uni<Void> write(LoadedCatalog file, Seen seen) {
        if (seen.standing().verdict() != FileStanding.Verdict.PUBLISH) {
            return settle(file, seen, false);
        }
        Map<String, Org> inFile = new HashMap<>();
        file.orgs().forEach(o -> inFile.put(o.id(), o));
        List<Uni<Boolean>> writes = new ArrayList<>();
        seen.stored().forEach((orgId, doc) -> {
            Org org = inFile.get(orgId);
            if (overwrites(file, org != null, doc)) {
                writes.add(put(orgId, org, doc, file, PUBLISH_TRIES));
            }
        });
        Uni<Boolean> wrote = writes.isEmpty() ? Uni.createFrom().item(false)
                : Uni.join().all(writes).andCollectFailures().map(done -> done.contains(true));
        return wrote.flatMap(any -> settle(file, seen, any));
    }

    /** Records what the publication did ({@link #fileStatus}), logs a file it refused, and loads the stored catalog. */
    private Uni<Void> settle(LoadedCatalog file, Seen seen, boolean wrote) {
        FileStanding standing = seen.standing();
        if (standing.verdict() != FileStanding.Verdict.PUBLISH) {
            logRefusal(file, standing);
            fileStatus = new FileStatus(file.revision(), standing.verdict() == FileStanding.Verdict.OLDER
                    ? FileStatus.OLDER : FileStatus.REVISION_NOT_RAISED);
        } else {
            fileStatus = new FileStatus(file.revision(), wrote ? FileStatus.PUBLISHED : FileStatus.UNCHANGED);
        }
        return refresh();
    }

    /** Tries a file's publication gets per org when other writers keep moving its version. */
    private static final int PUBLISH_TRIES = 5;

    /** The stored documents of {@code orgIds}, in their order, read at once. */
    private Uni<Map<String, Optional<VersionedDoc>>> readAll(java.util.Collection<String> orgIds) {
        List<String> ids = List.copyOf(orgIds);
        List<Uni<Optional<VersionedDoc>>> reads = new ArrayList<>();
        ids.forEach(o -> reads.add(store.orgCatalog(o)));
        Uni<List<Optional<VersionedDoc>>> all = reads.isEmpty() ? Uni.createFrom().item(List.of())
                : Uni.join().all(reads).andFailFast();
        return all.map(docs -> {
            Map<String, Optional<VersionedDoc>> out = new LinkedHashMap<>();
            for (int i = 0; i < ids.size(); i++) {
                out.put(ids.get(i), docs.get(i));
            }
            return out;
        });
    }

    /**
     * Writes one org of the file, or {@link #REMOVED} for one it no longer has ({@code org} null), over {@code stored}
     * when the file replaces it ({@link #overwrites}); on a lost compare-and-set, reads the org again and decides
     * again, so that a newer file another instance published meanwhile stays. True when it wrote.
     */
    private Uni<Boolean> put(String orgId, Org org, Optional<VersionedDoc> stored, LoadedCatalog file, int tries) {
        if (!overwrites(file, org != null, stored)) {
            return Uni.createFrom().item(false);
        }
        long expected = stored.map(VersionedDoc::version).orElse(0L);
        String orgHash = org == null ? null : CatalogCodec.contentHash(org);
        boolean sectionUnchanged = orgHash != null && stored.isPresent() && !removed(stored.get())
                && orgHash.equals(stored.get().orgHash());
        // an org whose own section the newer file left as it was keeps its stored document, admin edits included:
        // only the file it is recorded as coming from moves on (found by audit5: any change to the file replaced
        // every org's edits)
        String doc = org == null ? REMOVED : sectionUnchanged ? stored.get().json() : encode.apply(org);
        return store.putOrgCatalog(orgId, new VersionedDoc(doc, file.sourceHash(), orgHash, file.revision(),
                expected + 1), expected).flatMap(done -> {
                    if (done.isPresent()) {
                        if (org == null) {
                            log.log(System.Logger.Level.INFO, "org " + orgId + " is not in the configuration file: "
                                    + "removed (its keys no longer authenticate on any instance)");
                        }
                        return Uni.createFrom().item(true);
                    }
                    if (tries <= 1) {
                        log.log(System.Logger.Level.WARNING, "org " + orgId + " of the configuration file not "
                                + "published: its stored catalog kept changing under " + PUBLISH_TRIES + " tries");
                        return Uni.createFrom().item(false);
                    }
                    return store.orgCatalog(orgId).flatMap(again -> put(orgId, org, again, file, tries - 1));
                });
    }

    private void logRefusal(LoadedCatalog file, FileStanding standing) {
        long next = standing.storedRevision() + 1;
        if (standing.verdict() == FileStanding.Verdict.OLDER) {
            log.log(System.Logger.Level.WARNING, (file.revision() == LoadedCatalog.NO_REVISION
                    ? "the configuration file has no revision" : "the configuration file's revision "
                    + file.revision()) + " is older than the stored catalog's revision " + standing.storedRevision()
                    + ", which an instance started from a newer file published: not published; this instance serves "
                    + "the stored catalog. To publish this file (a rollback included), give it revision: " + next);
        } else {
            log.log(System.Logger.Level.ERROR, "the configuration file's revision " + file.revision()
                    + " (source " + file.sourceHash() + ") is the stored catalog's revision, which came from another "
                    + "text (source " + standing.storedHash() + "): not published; this instance serves the stored "
                    + "catalog. A changed file needs a higher revision: give it revision: " + next);
        }
    }

    /** This instance's configuration file against the stored catalog (what {@link #publish} found and did). */
    public FileStatus fileStatus() {
        return fileStatus;
    }

    /** The highest file revision among the stored orgs this instance holds (0: none), as of its last poll. */
    public long storedRevision() {
        return current.get().highestRevision();
    }

    /**
     * The revision of this instance's configuration file ({@link LoadedCatalog#NO_REVISION}: none) and what its
     * publication did: {@link #PUBLISHED}, {@link #UNCHANGED}, {@link #OLDER}, {@link #REVISION_NOT_RAISED}, or
     * {@link #NOT_YET} before it ran.
     */
    public record FileStatus(long fileRevision, String outcome) {
        public static final String NOT_YET = "not_published_yet";
        /** It was written over the stored catalog (at least one org). */
        public static final String PUBLISHED = "published";
        /** The stored catalog already came from it. */
        public static final String UNCHANGED = "unchanged";
        /** A newer file was published: this instance serves that one. */
        public static final String OLDER = "older_than_stored";
        /** Another text was published under the same revision: this instance serves that one. */
        public static final String REVISION_NOT_RAISED = "revision_not_raised";
    }

    /** A stored org the configuration file no longer has. */
    static boolean removed(VersionedDoc doc) {
        return REMOVED.equals(doc.json());
    }

    /**
     * Reloads every org whose stored version differs from the one held here. Two refreshes may overlap (the poll, and
     * the one an admin edit runs before it answers): each applies an org's change only while the catalog still holds
     * the version it started from, so a slower refresh that read older versions never puts back an org a faster one
     * already moved on (which showed an admin the group as it was before the edit just confirmed, for up to a poll).
     */
    public Uni<Void> refresh() {
        return store.catalogVersions().flatMap(versions -> {
            Catalog held = current.get();
            List<String> changed = new ArrayList<>();
            versions.forEach((org, v) -> {
                if (!v.equals(held.versions().get(org))) {
                    changed.add(org);
                }
            });
            boolean lost = held.versions().keySet().stream().anyMatch(o -> !versions.containsKey(o));
            if (changed.isEmpty() && !lost) {
                return Uni.createFrom().voidItem();
            }
            return readAll(changed).map(docs -> {
                Map<String, Reloaded> reloaded = new HashMap<>();
                unreadable.keySet().retainAll(versions.keySet());
                docs.forEach((orgId, d) -> {
                    // read, not removed first: readiness (unreadableOrgs) reading between a remove and the put that
                    // followed it saw an org that stays unreadable as readable (WrongSecretKeyTest failed so once)
                    Long unreadableBefore = unreadable.get(orgId);
                    if (d.isPresent() && removed(d.get())) {
                        unreadable.remove(orgId);
                        reloaded.put(orgId, new Reloaded(null, d.get().version(), d.get().revision()));
                    } else if (d.isPresent()) {
                        try {
                            reloaded.put(orgId, new Reloaded(decode.apply(d.get().json()), d.get().version(),
                                    d.get().revision()));
                            unreadable.remove(orgId);
                        } catch (RuntimeException e) {
                            unreadable.put(orgId, d.get().version());
                            if (!Long.valueOf(d.get().version()).equals(unreadableBefore)) {
                                // once per version: it was logged with its stack trace at every poll (found by hunt8)
                                log.log(System.Logger.Level.ERROR, "stored catalog of org " + orgId + " (version "
                                        + d.get().version() + ") is unreadable; keeping the previous one: " + e);
                            }
                        }
                    } else {
                        unreadable.remove(orgId);
                    }
                });
                current.updateAndGet(now -> merged(now, held, versions, reloaded));
                return null;
            });
        }).replaceWithVoid();
    }

    /** An org as a refresh read it: its catalog (null: removed from the file), version and file revision. */
    private record Reloaded(Org org, long version, long revision) {
    }

    /**
     * {@code now} with a refresh's findings applied: the orgs it {@code reloaded}, and the orgs the store no longer
     * lists dropped; each only where {@code now} still holds the version the refresh started from ({@code held}).
     */
    private static Catalog merged(Catalog now, Catalog held, Map<String, Long> versions,
                                  Map<String, Reloaded> reloaded) {
        Map<String, Org> orgs = new HashMap<>();
        for (Org o : now.orgs()) {
            orgs.put(o.id(), o);
        }
        Map<String, Long> vers = new HashMap<>(now.versions());
        Map<String, Long> revs = new HashMap<>(now.revisions());
        for (String org : held.versions().keySet()) {
            if (!versions.containsKey(org) && java.util.Objects.equals(now.versions().get(org),
                    held.versions().get(org))) {
                orgs.remove(org);
                vers.remove(org);
                revs.remove(org);
            }
        }
        reloaded.forEach((orgId, r) -> {
            if (!java.util.Objects.equals(now.versions().get(orgId), held.versions().get(orgId))) {
                return; // another refresh moved this org meanwhile: what it read is at least as new
            }
            if (r.org() == null) {
                orgs.remove(orgId);   // removed orgs keep their version, so that a poll does not read them again
            } else {
                orgs.put(orgId, r.org());
            }
            vers.put(orgId, r.version());
            revs.put(orgId, r.revision());
        });
        List<Org> ordered = new ArrayList<>(orgs.values());
        ordered.sort(java.util.Comparator.comparing(Org::id));
        return new Catalog(ordered, vers, revs);
    }

    /**
     * Applies an admin edit to one org with compare-and-set, retrying on a concurrent write. The edit sees the
     * stored org (not this instance's possibly older copy).
     */
    public Uni<Org> update(String orgId, UnaryOperator<Org> edit) {
        // decoding, the edit (an admin group edit is judged by the file loader's YAML parse) and encoding run on a
        // worker thread: the store answers on an event loop, which serves the gateway's requests too
        return store.orgCatalog(orgId).emitOn(Infrastructure.getDefaultWorkerPool()).flatMap(stored -> {
            if (stored.isEmpty() || removed(stored.get())) {
                return Uni.createFrom().failure(new UnknownOrg(orgId));
            }
            Org before = decode.apply(stored.get().json());
            Org after = edit.apply(before);
            long v = stored.get().version();
            return store.putOrgCatalog(orgId, new VersionedDoc(encode.apply(after), stored.get().sourceHash(),
                    stored.get().orgHash(), stored.get().revision(), v + 1), v)
                    .flatMap(res -> res.isPresent() ? refresh().replaceWith(after) : update(orgId, edit));
        });
    }

    /**
     * Publishes this instance's file again when the store holds an older revision of one of its orgs than the file:
     * its publication did not reach the store. It was made while the store was unreachable (the outage guard kept it
     * as a pending edit, which the store, holding the older org, then refused as an edit made on another copy: the
     * rollout was lost, and an alias the new file added answered 404 everywhere; found by hunt7). Only files with a
     * revision, and only when the file was to be published (not older than the stored catalog).
     */
    Uni<Void> republishIfLost() {
        LoadedCatalog f = file;
        FileStatus status = fileStatus;
        if (f == null || f.revision() == LoadedCatalog.NO_REVISION || !(FileStatus.PUBLISHED.equals(status.outcome())
                || FileStatus.UNCHANGED.equals(status.outcome()))) {
            return Uni.createFrom().voidItem();
        }
        Map<String, Long> revisions = current.get().revisions();
        // an org this instance cannot read (another secret key sealed it) is not behind: its revision is unknown
        // here, and publishing again would change nothing (it logged "publishing it again" at every poll; hunt14)
        boolean behind = f.orgs().stream().filter(o -> !unreadable.containsKey(o.id()))
                .anyMatch(o -> revisions.getOrDefault(o.id(), LoadedCatalog.NO_REVISION) < f.revision());
        if (!behind) {
            return Uni.createFrom().voidItem();
        }
        log.log(System.Logger.Level.WARNING, "the stored catalog holds an older revision than the configuration file's "
                + f.revision() + " (its publication did not reach the state store): publishing it again");
        return publish(f, wholeCatalog);
    }

    /** The stored orgs this instance could not read at its last look (see {@link #unreadable}). */
    public Set<String> unreadableOrgs() {
        return new TreeSet<>(unreadable.keySet());
    }

    /**
     * Polls the store every {@code every} until {@link #stop()}, publishing the file again if its publication was
     * lost ({@link #republishIfLost}). A failed poll is logged and retried.
     */
    public void startPolling(Scheduler scheduler, Duration every) {
        poller = scheduler.schedule(every, () -> refresh().flatMap(v -> republishIfLost()).subscribe().with(
                v -> reschedule(scheduler, every),
                t -> {
                    log.log(System.Logger.Level.WARNING, "catalog refresh failed: " + t);
                    reschedule(scheduler, every);
                }));
    }

    private void reschedule(Scheduler scheduler, Duration every) {
        if (!stopped) {
            startPolling(scheduler, every);
        }
    }

    public void stop() {
        stopped = true;
        poller.cancel();
    }

    /** An edit named an org the store does not hold (removed by another instance since the caller saw it). */
    public static final class UnknownOrg extends RuntimeException {
        public UnknownOrg(String orgId) {
            super("Unknown organization '" + orgId + "'.");
        }
    }
}
