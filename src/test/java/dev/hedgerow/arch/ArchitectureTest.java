package dev.hedgerow.arch;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** Keeps DESIGN.md's import rules true: a framework-free core, thin function edges. */
class ArchitectureTest {
    static final String[] CORE = {"dev.hedgerow.api..", "dev.hedgerow.catalog..", "dev.hedgerow.routing..",
        "dev.hedgerow.dispatch..", "dev.hedgerow.upstream..", "dev.hedgerow.state..", "dev.hedgerow.audit..",
        "dev.hedgerow.time..", "dev.hedgerow.runtime..", "dev.hedgerow.admin..", "dev.hedgerow.prober.."};
    static JavaClasses classes;

    @BeforeAll
    static void load() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.hedgerow");
    }

    @Test
    void coreKnowsNoQuarkusNorHttpServerTypes() {
        noClasses().that().resideInAnyPackage(CORE)
                // jakarta.enterprise.util.TypeLiteral is allowed: SmallRye FT's programmatic Guard takes it as a
                // plain type token (ResilientStateStore); CDI itself (context, inject, event) is not
                .should().dependOnClassesThat().resideInAnyPackage("io.quarkus..", "io.vertx.ext.web..",
                        "jakarta.ws.rs..", "jakarta.enterprise.context..", "jakarta.enterprise.inject..",
                        "jakarta.enterprise.event..", "org.jboss.resteasy..", "io.micrometer..")
                .check(classes);
    }

    @Test
    void coreNeverReachesIntoTheFunctionEdges() {
        noClasses().that().resideInAnyPackage(CORE)
                .should().dependOnClassesThat().resideInAnyPackage("dev.hedgerow.function..", "dev.hedgerow.sim..")
                .check(classes);
    }

    @Test
    void functionEdgesSendNoRedisCommands() {
        noClasses().that().resideInAPackage("dev.hedgerow.function..")
                .should().dependOnClassesThat().haveFullyQualifiedName("io.vertx.redis.client.Command")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("io.vertx.redis.client.Request")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("io.vertx.mutiny.redis.client.Request")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("io.vertx.mutiny.redis.client.RedisAPI")
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
