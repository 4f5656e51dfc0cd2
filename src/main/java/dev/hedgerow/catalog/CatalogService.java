package dev.hedgerow.catalog;

import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Keeps this instance's view of the catalog in step with the state store. At start the file's orgs are
 * published (only when the file changed since it was last published, so admin edits survive restarts) and stored
 * orgs the file no longer has are removed; then the
 * stored versions are polled and any org whose version moved is reloaded, so a change written by another instance
 * is seen within one poll interval without a restart. Admin edits are compare-and-set writes. Thread-safe.
 */
public final class CatalogService {
    private final StateStore store;
    private final Function<Org, String> encode;
    private final Function<String, Org> decode;
    private final AtomicReference<Catalog> current = new AtomicReference<>(Catalog.empty());
    private final System.Logger log = System.getLogger("dev.hedgerow.catalog");
    private volatile Cancellable poller = Cancellable.NONE;
    private volatile boolean stopped;

    public CatalogService(StateStore store, Function<Org, String> encode, Function<String, Org> decode) {
        this.store = store;
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
     * Publishes the orgs of a loaded file, which is the whole catalog: an org whose stored copy came from the same file
     * text is left as is, and a stored org the file no longer has is removed (see {@link #REMOVED}).
     */
    public Uni<Void> publish(List<Org> orgs, String sourceHash) {
        return publish(orgs, sourceHash, true);
    }

    /**
     * Publishes the orgs of a loaded file; with {@code wholeCatalog}, stored orgs the file does not have are removed.
     * Without it (the bundled demo) other orgs are left alone.
     */
    public Uni<Void> publish(List<Org> orgs, String sourceHash, boolean wholeCatalog) {
        List<Uni<Void>> writes = new ArrayList<>();
        for (Org org : orgs) {
            writes.add(store.orgCatalog(org.id()).flatMap(stored -> {
                if (stored.isPresent() && sourceHash.equals(stored.get().sourceHash())) {
                    return Uni.createFrom().voidItem();
                }
                long expected = stored.map(VersionedDoc::version).orElse(0L);
                return store.putOrgCatalog(org.id(), new VersionedDoc(encode.apply(org), sourceHash, expected + 1),
                        expected).replaceWithVoid();
            }));
        }
        if (writes.isEmpty()) {
            return refresh();
        }
        Uni<Void> published = Uni.join().all(writes).andCollectFailures().replaceWithVoid();
        if (wholeCatalog) {
            Set<String> inFile = new HashSet<>();
            orgs.forEach(o -> inFile.add(o.id()));
            published = published.flatMap(v -> removeOthers(inFile, sourceHash));
        }
        return published.flatMap(v -> refresh());
    }

    /** Stores every org but {@code keep} as removed (compare-and-set: an org edited meanwhile is left for next time). */
    private Uni<Void> removeOthers(Set<String> keep, String sourceHash) {
        return store.catalogVersions().flatMap(versions -> {
            List<Uni<Void>> removals = new ArrayList<>();
            for (String orgId : versions.keySet()) {
                if (keep.contains(orgId)) {
                    continue;
                }
                removals.add(store.orgCatalog(orgId).flatMap(stored -> {
                    if (stored.isEmpty() || removed(stored.get())) {
                        return Uni.createFrom().voidItem();
                    }
                    long v = stored.get().version();
                    return store.putOrgCatalog(orgId, new VersionedDoc(REMOVED, sourceHash, v + 1), v)
                            .invoke(done -> done.ifPresent(x -> log.log(System.Logger.Level.INFO, "org " + orgId
                                    + " is not in the configuration file: removed (its keys no longer authenticate "
                                    + "on any instance)")))
                            .replaceWithVoid();
                }));
            }
            return removals.isEmpty() ? Uni.createFrom().voidItem()
                    : Uni.join().all(removals).andCollectFailures().replaceWithVoid();
        });
    }

    /** A stored org the configuration file no longer has. */
    static boolean removed(VersionedDoc doc) {
        return REMOVED.equals(doc.json());
    }

    /** Reloads every org whose stored version differs from the one held here. */
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
            List<Uni<Optional<VersionedDoc>>> reads = new ArrayList<>();
            changed.forEach(o -> reads.add(store.orgCatalog(o)));
            Uni<List<Optional<VersionedDoc>>> all = reads.isEmpty() ? Uni.createFrom().item(List.of())
                    : Uni.join().all(reads).andFailFast();
            return all.map(docs -> {
                Map<String, Org> orgs = new HashMap<>();
                Map<String, Long> vers = new HashMap<>();
                for (Org o : held.orgs()) {
                    if (versions.containsKey(o.id())) {
                        orgs.put(o.id(), o);
                    }
                }
                // removed orgs keep their version here too, so that a poll does not read them again
                held.versions().forEach((org, v) -> {
                    if (versions.containsKey(org)) {
                        vers.put(org, v);
                    }
                });
                for (int i = 0; i < changed.size(); i++) {
                    Optional<VersionedDoc> d = docs.get(i);
                    if (d.isPresent() && removed(d.get())) {
                        orgs.remove(changed.get(i));
                        vers.put(changed.get(i), d.get().version());
                    } else if (d.isPresent()) {
                        try {
                            orgs.put(changed.get(i), decode.apply(d.get().json()));
                            vers.put(changed.get(i), d.get().version());
                        } catch (RuntimeException e) {
                            log.log(System.Logger.Level.ERROR, "stored catalog of org " + changed.get(i)
                                    + " is unreadable; keeping the previous one", e);
                        }
                    }
                }
                List<Org> ordered = new ArrayList<>(orgs.values());
                ordered.sort(java.util.Comparator.comparing(Org::id));
                current.set(new Catalog(ordered, vers));
                return null;
            });
        }).replaceWithVoid();
    }

    /**
     * Applies an admin edit to one org with compare-and-set, retrying on a concurrent write. The edit sees the
     * stored org (not this instance's possibly older copy).
     */
    public Uni<Org> update(String orgId, UnaryOperator<Org> edit) {
        return store.orgCatalog(orgId).flatMap(stored -> {
            if (stored.isEmpty() || removed(stored.get())) {
                return Uni.createFrom().failure(new UnknownOrg(orgId));
            }
            Org before = decode.apply(stored.get().json());
            Org after = edit.apply(before);
            long v = stored.get().version();
            return store.putOrgCatalog(orgId, new VersionedDoc(encode.apply(after), stored.get().sourceHash(), v + 1),
                    v).flatMap(res -> res.isPresent() ? refresh().replaceWith(after) : update(orgId, edit));
        });
    }

    /** Polls the store every {@code every} until {@link #stop()}. A failed poll is logged and retried. */
    public void startPolling(Scheduler scheduler, Duration every) {
        poller = scheduler.schedule(every, () -> refresh().subscribe().with(
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
