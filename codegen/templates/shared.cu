// {{ dsl }}{% if let Some(note) = note %}: {{ note }}{% endif %}
__shared__ __align__(16) {{ element }} {{ name }}{% if stages > 1 %}[{{ stages }}]{% endif %}[{{ rows }}][{{ cols }}{% if pad > 0 %} + {{ pad }}{% endif %}];
