package dev.hedgerow.arch;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.TreeSet;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.simpleNameStartingWith;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Keeps DESIGN.md's import rules true: a framework-free core, thin function edges. */
class ArchitectureTest {
    /** The HTTP edges and the simulator (an HTTP server of its own); every other package is core. */
    static final String[] EDGES = {"dev.hedgerow.function..", "dev.hedgerow.sim.."};
    /** The core packages there are today (a new one is core too; this list only makes its arrival visible). */
    static final Set<String> CORE = Set.of("dev.hedgerow.api", "dev.hedgerow.catalog", "dev.hedgerow.routing",
            "dev.hedgerow.dispatch", "dev.hedgerow.upstream", "dev.hedgerow.state", "dev.hedgerow.audit",
            "dev.hedgerow.time", "dev.hedgerow.runtime", "dev.hedgerow.admin", "dev.hedgerow.prober");
    /**
     * Quarkus, CDI, JAX-RS, MicroProfile, the HTTP server's types (Vert.x Web, Vert.x's server request and
     * response, in either API) and metrics. {@code jakarta.enterprise.util.TypeLiteral} is allowed: SmallRye FT's
     * programmatic Guard takes it as a plain type token (ResilientStateStore); CDI itself is not.
     */
    static final DescribedPredicate<JavaClass> FRAMEWORK = resideInAnyPackage("io.quarkus..", "io.vertx.ext.web..",
            "io.vertx.mutiny.ext.web..", "io.vertx.core.http.impl..", "jakarta.ws.rs..",
            "jakarta.enterprise.context..", "jakarta.enterprise.inject..", "jakarta.enterprise.event..",
            "jakarta.inject..", "jakarta.annotation..", "jakarta.interceptor..", "org.eclipse.microprofile..",
            "io.smallrye.config..", "org.jboss.resteasy..", "io.micrometer..")
            .or(resideInAnyPackage("io.vertx.core.http..", "io.vertx.mutiny.core.http..")
                    .and(simpleNameStartingWith("HttpServer").or(simpleNameStartingWith("ServerWebSocket"))))
            .as("are framework or HTTP-server types");
    static JavaClasses classes;

    @BeforeAll
    static void load() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.hedgerow");
    }

    @Test
    void theCorePackagesAreTheOnesKnown() {
        Set<String> core = new TreeSet<>();
        classes.forEach(c -> {
            String p = c.getPackageName();
            if (!p.startsWith("dev.hedgerow.function") && !p.startsWith("dev.hedgerow.sim")) {
                core.add(p);
            }
        });
        assertEquals(new TreeSet<>(CORE), core, "a new core package: add it to CORE (the rules below cover it anyway)");
    }

    @Test
    void coreKnowsNoQuarkusNorHttpServerTypes() {
        noClasses().that().resideOutsideOfPackages(EDGES)
                .should().dependOnClassesThat(FRAMEWORK)
                .check(classes);
    }

    @Test
    void coreNeverReachesIntoTheFunctionEdges() {
        noClasses().that().resideOutsideOfPackages(EDGES)
                .should().dependOnClassesThat().resideInAnyPackage(EDGES)
                .check(classes);
    }

    /**
     * The edges may build the Redis client (its options and type, in {@code HedgerowApp}) but send nothing through
     * it: no command, request, response, connection or API type of either Vert.x Redis API, nor Quarkus' Redis.
     */
    @Test
    void functionEdgesSendNoRedisCommands() {
        noClasses().that().resideInAPackage("dev.hedgerow.function..")
                .should().dependOnClassesThat(resideInAnyPackage("io.vertx.redis.client..",
                                "io.vertx.mutiny.redis.client..", "io.quarkus.redis..")
                        .and(DescribedPredicate.not(simpleNameStartingWith("RedisOptions")
                                .or(simpleNameStartingWith("RedisClientType"))
                                .or(simpleNameStartingWith("RedisReplicas"))
                                .or(JavaClass.Predicates.simpleName("Redis"))))
                        .as("are Redis command, request, response, connection or API types"))
                .check(classes);
    }

    @Test
    void onlyTheRoutingAndDispatchCoreSeesTheUpstreamClient() {
        noClasses().that().resideInAnyPackage("dev.hedgerow.api..", "dev.hedgerow.catalog..", "dev.hedgerow.state..",
                        "dev.hedgerow.audit..", "dev.hedgerow.time..")
                .should().dependOnClassesThat().resideInAPackage("dev.hedgerow.upstream..")
                .check(classes);
    }
}
