package dev.hedgerow.function;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import io.quarkus.runtime.annotations.RegisterForReflection;
import org.junit.jupiter.api.Test;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What a native image needs that the JVM forgives: every type Jackson binds by reflection is registered, and nothing
 * generates classes at run time. (scripts/native-check runs the Quarkus native build steps themselves.)
 */
class NativeReadinessTest {

    /** Types handed to Jackson data binding (SimJson.read / write / valueToTree); everything else uses trees. */
    static final List<Class<?>> BOUND_ROOTS = List.of(SimConfig.class, ModelScript.class, Fault.class, SimStats.class);

    @Test
    void everyTypeJacksonBindsIsRegisteredForReflection() {
        Set<String> registered = new TreeSet<>();
        for (Class<?> c : NativeReflection.class.getAnnotation(RegisterForReflection.class).targets()) {
            registered.add(c.getName());
        }
        assertEquals(new TreeSet<>(reachable()), registered);
    }

    /** Records, enums and polymorphic subtypes of ours reachable from the roots through record components. */
    static Set<String> reachable() {
        Set<String> seen = new LinkedHashSet<>();
        Deque<Type> todo = new ArrayDeque<>(BOUND_ROOTS);
        while (!todo.isEmpty()) {
            Type t = todo.pop();
            if (t instanceof ParameterizedType p) {
                todo.addAll(List.of(p.getActualTypeArguments()));
                todo.push(p.getRawType());
                continue;
            }
            if (!(t instanceof Class<?> c) || !c.getName().startsWith("dev.hedgerow.") || !seen.add(c.getName())) {
                continue;
            }
            if (c.isRecord()) {
                for (RecordComponent rc : c.getRecordComponents()) {
                    todo.push(rc.getGenericType());
                }
            }
            JsonSubTypes subs = c.getAnnotation(JsonSubTypes.class);
            if (subs != null) {
                for (JsonSubTypes.Type s : subs.value()) {
                    todo.push(s.value());
                }
            }
            if (c.isSealed()) {
                todo.addAll(List.of(c.getPermittedSubclasses()));
            }
        }
        return seen;
    }

    @Test
    void noCodeGeneratesOrProxiesClassesAtRunTime() {
        JavaClasses ours = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.hedgerow");
        noClasses().should().callMethod(java.lang.reflect.Proxy.class, "newProxyInstance", ClassLoader.class,
                        Class[].class, java.lang.reflect.InvocationHandler.class)
                .orShould().callMethodWhere(com.tngtech.archunit.base.DescribedPredicate.describe(
                        "defineClass / defineHiddenClass", call -> call.getTarget().getName().startsWith("define")
                                && (call.getTargetOwner().isAssignableTo(ClassLoader.class)
                                || call.getTargetOwner().isEquivalentTo(java.lang.invoke.MethodHandles.Lookup.class))))
                .orShould().dependOnClassesThat().resideInAnyPackage("net.bytebuddy..", "javassist..", "org.objectweb.asm..")
                .check(ours);
    }
}
