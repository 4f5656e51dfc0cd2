package dev.hedgerow.catalog;

import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Keeps this instance's view of the catalog in step with the state store. At start the file's orgs are
 * published (only when the file changed since it was last published, so admin edits survive restarts); then the
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

    /** Publishes the orgs of a loaded file; an org whose stored copy came from the same file text is left as is. */
    public Uni<Void> publish(List<Org> orgs, String sourceHash) {
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
        return Uni.join().all(writes).andCollectFailures().replaceWithVoid().flatMap(v -> refresh());
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
            boolean removed = held.versions().keySet().stream().anyMatch(o -> !versions.containsKey(o));
            if (changed.isEmpty() && !removed) {
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
                        vers.put(o.id(), held.versions().get(o.id()));
                    }
                }
                for (int i = 0; i < changed.size(); i++) {
                    Optional<VersionedDoc> d = docs.get(i);
                    if (d.isPresent()) {
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
            if (stored.isEmpty()) {
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
