# frozen_string_literal: true

module LittleGhost
  class Sandbox
    # The Data protocol of Execution and ProcessSession::Chunk: one implementation for every Ruby (Data only
    # exists from 3.2), documented with the two classes in documentation/execution.rb and
    # documentation/process_session.rb.
    #
    # The Rust extension keeps what is hot or holds state: the values themselves (TypedData, marked for the GC,
    # no instance variables), the allocator, the member readers, Execution#success?, and the runner's and the
    # session's instances, built without +new+. For each class it also defines the constants +MEMBERS+,
    # +OPTIONAL+ (members that default to nil) and +EXTRAS+ (keywords stored and read like members but outside the
    # value, such as Execution#signal), made private when this module is included, the private
    # <tt>initialize_values(values)</tt> (stores every value, members then extras, once, each unfrozen String as a
    # frozen copy, and freezes the object) and the protected +data_values+ (those values as an Array). Rust never
    # calls the methods defined here.
    module DataLike # :nodoc: all
      # The class method +members+.
      module ClassMethods
        # The member names, a frozen Array of Symbols.
        def members
          DataLike.shape(self).fetch(0)
        end
      end

      # Each including class's [members, optional, extras], read once from the constants the extension defined, so
      # a subclass's constant or method of the same name cannot change what the values mean.
      SHAPES = {}.compare_by_identity
      private_constant :ClassMethods, :SHAPES

      def self.included(base)
        SHAPES[base] = %i[MEMBERS OPTIONAL EXTRAS].map { |name| base.const_get(name, false) }.freeze
        base.extend(ClassMethods)
        base.private_constant(:MEMBERS, :OPTIONAL, :EXTRAS)
      end

      class << self
        # [members, optional, extras] of +klass+ (an including class or a subclass of one).
        def shape(klass)
          SHAPES.fetch(klass) { SHAPES.fetch(klass.ancestors.find { |ancestor| SHAPES.key?(ancestor) }) }
        end

        # The names +klass+ stores: its members, then its extras.
        def names(klass)
          members, _optional, extras = shape(klass)
          members + extras
        end

        # The member values of +object+, from its storage.
        def member_values(object)
          object.__send__(:data_values).first(shape(object.class).fetch(0).size)
        end

        # Member name => value of +object+.
        def member_hash(object)
          shape(object.class).fetch(0).zip(member_values(object)).to_h
        end

        # Whether +other+ (any object, even a BasicObject) is an instance of exactly +object+'s class.
        def same_class?(object, other)
          object.class === other && other.class.equal?(object.class) # rubocop:disable Style/CaseEquality
        end

        # Puts each keyword into +given+ (name => value) under its member or extra name; ArgumentError for
        # unknown names, and for a name +given+ already holds when +once+.
        def assign(klass, given, keywords, once:)
          names = self.names(klass)
          unknown = []
          keywords.each do |key, value|
            name = key_name(key)
            slot = names.find { |candidate| candidate.name == name }
            if slot.nil?
              unknown << name
            elsif once && given.key?(slot)
              raise ArgumentError, "duplicate value for :#{name}"
            else
              given[slot] = value
            end
          end
          raise ArgumentError, "unknown #{keyword_list(unknown)}" unless unknown.empty?
        end

        # A keyword's name: a Symbol's or a String's, an Integer's digits; any other key is named by its class
        # (and is never a member).
        def key_name(key)
          case key
          when Symbol, String, Integer then key.to_s
          else "#<#{key.class.name}>"
          end
        end

        # "keyword: :a" or "keywords: :a, :b", as Ruby's own keyword errors read.
        def keyword_list(names)
          "#{names.size == 1 ? "keyword" : "keywords"}: #{names.map { |name| ":#{name}" }.join(", ")}"
        end
      end

      # Builds the value from keywords, or positional values in member order, with Data's ArgumentError
      # messages; initialize_values stores Strings as frozen copies and freezes the object.
      def initialize(*positional, **keywords)
        members, optional, _extras = DataLike.shape(self.class)
        if positional.size > members.size
          raise ArgumentError, "wrong number of arguments (given #{positional.size}, expected 0..#{members.size})"
        end

        given = members.first(positional.size).zip(positional).to_h
        DataLike.assign(self.class, given, keywords, once: true)
        missing = members - given.keys - optional
        raise ArgumentError, "missing #{DataLike.keyword_list(missing)}" unless missing.empty?

        initialize_values(DataLike.names(self.class).map { |name| given[name] })
      end

      # The member names.
      def members
        DataLike.shape(self.class).fetch(0)
      end

      # The members as a Hash; a block maps each pair like Hash#to_h.
      def to_h(&block)
        block ? DataLike.member_hash(self).to_h(&block) : DataLike.member_hash(self)
      end

      # +dup+ and +clone+: a frozen copy holding the same values, as Data's.
      def initialize_copy(other)
        initialize_values(other.__send__(:data_values))
      end

      # A copy with the given members (or extras) replaced; self when none are given. The copy is built without
      # +initialize+, like the runner's.
      def with(*positional, **keywords)
        unless positional.empty?
          raise ArgumentError, "wrong number of arguments (given #{positional.size}, expected 0)"
        end
        return self if keywords.empty?

        given = DataLike.names(self.class).zip(__send__(:data_values)).to_h
        DataLike.assign(self.class, given, keywords, once: false)
        copy = self.class.allocate
        copy.__send__(:initialize_values, given.values)
        copy
      end

      # Same class and every member == (or the same object).
      def ==(other)
        equal?(other) ||
          (DataLike.same_class?(self, other) && DataLike.member_values(self) == DataLike.member_values(other))
      end

      # Same class and every member eql? (or the same object).
      def eql?(other)
        equal?(other) ||
          (DataLike.same_class?(self, other) && DataLike.member_values(self).eql?(DataLike.member_values(other)))
      end

      # A hash of the class and the member values, consistent with #eql?.
      def hash
        [self.class, *DataLike.member_values(self)].hash
      end

      # <tt>#<data ClassName member=value, ...></tt>, like Data#inspect.
      def inspect
        fields = DataLike.member_hash(self).map { |name, value| "#{name}=#{value.inspect}" }
        name = self.class.name
        "#<data #{"#{name} " if name}#{fields.join(", ")}>"
      end
      alias to_s inspect

      # The member values in order (array patterns).
      def deconstruct
        DataLike.member_values(self)
      end

      # The requested members as a Hash, in member order (hash patterns); nil asks for all of them.
      def deconstruct_keys(keys)
        return DataLike.member_hash(self) if keys.nil?

        wanted = Array.try_convert(keys) or raise TypeError, "no implicit conversion of #{keys.class} into Array"
        DataLike.member_hash(self).select { |name, _| wanted.include?(name) }
      end
    end

    Execution.include(DataLike)
    ProcessSession::Chunk.include(DataLike)
    private_constant :DataLike
  end
end
