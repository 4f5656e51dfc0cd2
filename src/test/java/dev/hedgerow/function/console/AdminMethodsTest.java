package dev.hedgerow.function.console;

import jakarta.ws.rs.HttpMethod;
import jakarta.ws.rs.Path;
import org.junit.jupiter.api.Test;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin API's list of methods by path (the 405's {@code Allow}) is the one its resource declares. */
class AdminMethodsTest {

    @Test
    void theListIsWhatAdminResourceDeclares() {
        Map<String, List<String>> declared = new TreeMap<>();
        for (Method m : AdminResource.class.getDeclaredMethods()) {
            Path path = m.getAnnotation(Path.class);
            for (Annotation a : m.getAnnotations()) {
                HttpMethod http = a.annotationType().getAnnotation(HttpMethod.class);
                if (path != null && http != null) {
                    declared.computeIfAbsent(path.value(), p -> new ArrayList<>()).add(http.value());
                }
            }
        }
        declared.values().forEach(methods -> methods.sort(null));
        Map<String, List<String>> listed = new TreeMap<>();
        AdminMethods.BY_TEMPLATE.forEach((p, methods) -> listed.put(p, methods.stream().sorted().toList()));
        assertEquals(declared, listed);
    }

    @Test
    void aPathMatchesItsTemplateOnly() {
        assertEquals(Optional.of("GET, HEAD, PUT"), AdminMethods.allow("/admin/groups/a/b"));
        assertEquals(Optional.of("GET, HEAD"), AdminMethods.allow("/admin/groups"));
        assertEquals(Optional.empty(), AdminMethods.allow("/admin/groups/"));
        assertEquals(Optional.empty(), AdminMethods.allow("/admin/whoamix"));
        assertEquals(Optional.empty(), AdminMethods.allow("/whoami"));
        assertTrue(AdminMethods.pattern("/x/{id}/y").matcher("/x/1/y").matches(), "{id} is one segment");
        assertFalse(AdminMethods.pattern("/x/{id}/y").matcher("/x/1/2/y").matches());
    }
}
