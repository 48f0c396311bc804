__syncthreads();  // {% if let Some(reason) = reason %}{{ reason }}{% else %}sync(){% endif %}
